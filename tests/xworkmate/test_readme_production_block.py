"""tests/readme_production.py reads the README's Production block as the integration test runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.readme_production import production_block, production_script

ARGS = dict(venv=Path("/tmp/v"), database_url="postgresql://postgres@127.0.0.1:5432/t", broker_url="redis://127.0.0.1:6379/9",
            home=Path("/tmp/h"), config_dir=Path("/tmp/etc"), port=8123, logs=Path("/tmp/l"),
            pids=Path("/tmp/p"))


def test_the_block_installs_the_wheel_writes_the_example_config_and_starts_serve():
    script = production_script(production_block(), **ARGS)
    assert "python3 -m venv /tmp/v\n" in script
    assert "/tmp/v/bin/pip install dist/xworkmate-*-py3-none-any.whl" in script
    assert 'xworkmate manage xworkmate config --example > "$XWORKMATE_CONFIG"' in script
    assert "XWORKMATE_CONFIG=/tmp/etc/xworkmate.toml" in script
    assert "xworkmate serve --bind 127.0.0.1:8123 --web-workers 9 --workers 2 >" in script
    assert script.count(" 2>&1 &\n") == 1 and script.count('echo $! >>"/tmp/p"') == 1
    for documented in ("db:5432", "cache:6379", "=...", "/var/lib/xworkmate", ":8000 ", "/opt/"):
        assert documented not in script


def test_a_block_that_drifts_from_the_documented_values_is_refused():
    block = production_block()
    with pytest.raises(ValueError, match="no longer says"):
        production_script(block.replace("redis://cache:6379/0", "redis://other/0"), **ARGS)
    serveless = block.replace("xworkmate serve ", "echo serve ")
    with pytest.raises(ValueError, match="starts 0 services"):
        production_script(serveless, **ARGS)
