"""Issue 19: the project installed as a user installs it runs on PostgreSQL and Redis.

A fresh venv gets `pip install <copy of the checkout>` (not editable, without
the dev extras), and gunicorn, a worker and beat run from that venv, outside
the checkout, on the test database and the test Redis. A missing runtime
dependency (kombu's Redis transport needs `packaging`, which only the
`kombu[redis]` extra brings) fails here, where the dev extras would hide it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from django.conf import settings

from tests.conftest import copy_checkout, free_port
from tests.integration.conftest import database_url, health_json, wait_for
from xworkmate.models import PeriodicJobState
from xworkmate.supervisor import WEB_WORKER_CLASS

CONFIG = """
[[periodic_jobs]]
name = "liveness"
every = "1s"
"""


def fresh_venv(tmp_path: Path) -> Path:
    """A new venv with the project installed from a copy of the checkout; its bin folder."""
    source = copy_checkout(tmp_path / "source")
    venv = tmp_path / "venv"
    subprocess.run(["python3", "-m", "venv", str(venv)], check=True)
    installed = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", str(source)],
        capture_output=True, text=True, check=False, timeout=600,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return venv / "bin"


def _liveness_runs() -> int:
    state = PeriodicJobState.objects.filter(name="liveness").first()
    return 0 if state is None else int(state.runs)


def test_a_clean_install_runs_the_service_on_postgresql_and_redis(real_services, tmp_path):
    bin_ = fresh_venv(tmp_path)
    python = str(bin_ / "python")

    def run(*code: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([python, "-c", *code], capture_output=True, text=True,
                              cwd=tmp_path, check=False)

    # The Redis transport imports with the runtime dependencies alone...
    transport = run("import kombu.transport.redis")
    assert transport.returncode == 0, transport.stderr
    # ...which is all this venv has: no dev extras, and the package is the installed copy.
    assert run("import pytest").returncode != 0
    where = run("import xworkmate; print(xworkmate.__file__)")
    assert where.stdout.strip().startswith(str(tmp_path / "venv")), where.stdout + where.stderr

    config = tmp_path / "xworkmate.toml"
    config.write_text(CONFIG, encoding="utf-8")
    dropped = ("PYTHONPATH", "VIRTUAL_ENV", "DJANGO_SETTINGS_MODULE")
    env = {k: v for k, v in os.environ.items() if k not in dropped and not k.startswith("XWORKMATE_")}
    env |= {
        "DJANGO_SETTINGS_MODULE": "xworkmate.settings",
        "XWORKMATE_CONFIG": str(config),
        "XWORKMATE_HOME": str(tmp_path / "home"),
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "HOME": str(tmp_path),
    }
    migrated = subprocess.run([python, "-m", "django", "migrate", "--noinput"], cwd=tmp_path,
                              env=env, capture_output=True, text=True, check=False, timeout=120)
    assert migrated.returncode == 0, migrated.stdout + migrated.stderr

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    commands = {
        "gunicorn": [str(bin_ / "gunicorn"), "xworkmate.wsgi:application", "--bind",
                     f"127.0.0.1:{port}", "--workers", "2", "--worker-class", WEB_WORKER_CLASS],
        "worker": [str(bin_ / "celery"), "-A", "xworkmate.celery", "worker", "--loglevel",
                   "INFO", "--concurrency", "2", "--hostname", f"clean-install-{os.getpid()}@%h"],
        "beat": [str(bin_ / "celery"), "-A", "xworkmate.celery", "beat", "--loglevel", "INFO"],
    }
    procs = []
    try:
        for name, command in commands.items():
            with (tmp_path / f"{name}.log").open("wb") as log:
                procs.append(subprocess.Popen(command, cwd=tmp_path, env=env, stdout=log,
                                              stderr=log))

        def logs() -> str:
            return "\n".join(p.read_text(errors="replace") for p in tmp_path.glob("*.log"))

        # A liveness tick is beat -> Redis -> this venv's worker -> PostgreSQL: none other
        # consumes this test database.
        wait_for(lambda: _liveness_runs() >= 2, timeout=60, what="liveness ticks")
        health = wait_for(
            lambda: (h := health_json(base)) is not None and h["status"] == "ok" and h,
            timeout=30, what="/healthz ok",
        )
        assert isinstance(health, dict), logs()
        assert health["database"]["status"] == "ok"
        assert health["database"]["vendor"] == "postgresql"
        assert health["broker"] == {"status": "ok", "transport": "redis",
                                    "latency_ms": health["broker"]["latency_ms"]}
        assert health["periodic_jobs"]["liveness"]["runs"] >= 2
        worker_log = (tmp_path / "worker.log").read_text(errors="replace")
        assert "xworkmate.liveness" in worker_log and "succeeded" in worker_log, logs()
        for proc in procs:
            assert proc.poll() is None, logs()
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
