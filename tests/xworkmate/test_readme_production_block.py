"""tests/readme_production.py reads the README's Production block as the integration test runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.readme_production import production_block, production_script

ARGS = dict(database_url="postgresql://postgres@127.0.0.1:5432/t", broker_url="redis://127.0.0.1:6379/9",
            home=Path("/tmp/h"), config_dir=Path("/tmp/etc"), port=8123, logs=Path("/tmp/l"),
            pids=Path("/tmp/p"))


def test_the_block_copies_the_example_config_and_starts_three_processes_in_the_background():
    script = production_script(production_block(), **ARGS)
    assert 'cp xworkmate.example.toml "$XWORKMATE_CONFIG"' in script
    assert "XWORKMATE_CONFIG=/tmp/etc/xworkmate.toml" in script
    assert "--bind 127.0.0.1:8123 --workers 9" in script
    assert script.count(" 2>&1 &\n") == 3 and script.count('echo $! >>"/tmp/p"') == 3
    assert "celery -A xworkmate.celery beat --loglevel INFO >" in script
    for documented in ("db:5432", "cache:6379", "=...", "/var/lib/xworkmate", ":8000 "):
        assert documented not in script


def test_a_block_that_drifts_from_the_documented_values_is_refused():
    block = production_block()
    with pytest.raises(ValueError, match="no longer says"):
        production_script(block.replace("redis://cache:6379/0", "redis://other/0"), **ARGS)
    beatless = "\n".join(line for line in block.splitlines() if " beat " not in line)
    with pytest.raises(ValueError, match="starts 2 processes"):
        production_script(beatless, **ARGS)
