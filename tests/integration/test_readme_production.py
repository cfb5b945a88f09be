"""Issue 19: the README's Production block, run for real on PostgreSQL and Redis.

The block comes out of README.md (tests/readme_production.py): the example
config copied to $XWORKMATE_CONFIG as documented, migrate, bootstrap,
collectstatic, then gunicorn, a worker and beat with the documented arguments
(started in the background). /healthz must then report PostgreSQL and Redis,
which it would not if the copied example masked the URLs (D-K21).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

from django.conf import settings

from tests.conftest import ROOT, free_port
from tests.gateway.test_readme_example import fresh_clone, fresh_env
from tests.integration.conftest import database_url, health_json, pid_alive, wait_for
from tests.readme_production import production_block, production_script


def _stop(pids: list[int]) -> None:
    for pid in pids:
        if pid_alive(pid):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while any(pid_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in pids:
        if pid_alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_the_readme_production_block_runs_on_postgresql_and_redis(real_services, tmp_path):
    clone = fresh_clone(tmp_path / "clone")
    (tmp_path / "user").mkdir()
    port = free_port()
    pids_file = tmp_path / "pids"
    script = production_script(
        production_block(), database_url=database_url(), broker_url=settings.CELERY_BROKER_URL,
        home=tmp_path / "home", config_dir=tmp_path / "etc", port=port, logs=tmp_path,
        pids=pids_file,
    )
    env = fresh_env(tmp_path / "user", tmp_path)
    pids: list[int] = []
    try:
        result = subprocess.run(["bash", "-c", script], cwd=clone, env=env, capture_output=True,
                                text=True, timeout=300, check=False)
        if pids_file.exists():
            pids = [int(line) for line in pids_file.read_text().split()]
        assert result.returncode == 0, result.stdout + result.stderr
        assert len(pids) == 3

        def logs() -> str:
            return "\n".join(p.read_text(errors="replace") for p in tmp_path.glob("process-*.log"))

        # The config is the example, copied where the block says.
        copied = tmp_path / "etc" / "xworkmate.toml"
        assert copied.read_text() == (ROOT / "xworkmate.example.toml").read_text()
        base = f"http://127.0.0.1:{port}"
        health = wait_for(
            lambda: (h := health_json(base)) is not None and h["status"] == "ok" and h,
            timeout=90, what="/healthz ok from the README's production processes",
        )
        assert isinstance(health, dict), logs()
        assert health["database"]["status"] == "ok"
        assert health["database"]["vendor"] == "postgresql"
        assert health["broker"]["status"] == "ok"
        assert health["broker"]["transport"] == "redis"
        # The beat of the block holds the lease and every default job is scheduled.
        assert health["beat_lease"]["holder"]
        assert all(pidpid_alive for pidpid_alive in map(pid_alive, pids)), logs()
    finally:
        _stop(pids)
