"""Issues 19 and 20: the release as an operator installs it runs on PostgreSQL and Redis.

The runtime tarball of `scripts/dist` is checked against SHA256SUMS and installed by
its own install.sh with no package index (tests/integration/release.py): not
editable, without the dev extras. The processes then run as the deployment files
start them, from that venv, outside the checkout, on the test database and the test
Redis: `xworkmate serve --only web|worker|beat` as the systemd units and the compose
file do, and the Procfile under honcho. A missing runtime dependency (kombu's Redis
transport needs `packaging`, which only the `kombu[redis]` extra brings) fails here,
where the dev extras would hide it; so does a dependency the tarball lacks.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from django.conf import settings

from tests.conftest import ROOT, free_port, stop_group
from tests.integration.conftest import database_url, health_json, wait_for
from xworkmate import __version__
from xworkmate.models import PeriodicJobState

CONFIG = """
[[periodic_jobs]]
name = "liveness"
every = "1s"
"""


def _liveness_runs() -> int:
    state = PeriodicJobState.objects.filter(name="liveness").first()
    return 0 if state is None else int(state.runs)


def _service_env(tmp_path: Path, bin_: Path) -> dict[str, str]:
    """The environment file's variables, the installed venv first on PATH."""
    config = tmp_path / "xworkmate.toml"
    config.write_text(CONFIG, encoding="utf-8")
    dropped = ("PYTHONPATH", "VIRTUAL_ENV", "DJANGO_SETTINGS_MODULE")
    env = {k: v for k, v in os.environ.items() if k not in dropped and not k.startswith("XWORKMATE_")}
    return env | {
        "PATH": f"{bin_}:/usr/bin:/bin",
        "XWORKMATE_CONFIG": str(config),
        "XWORKMATE_HOME": str(tmp_path / "home"),
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "HOME": str(tmp_path),
    }


def _logs(tmp_path: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in tmp_path.glob("*.log"))


def _check_the_service(tmp_path: Path, base: str) -> None:
    # A liveness tick is beat -> Redis -> this venv's worker -> PostgreSQL: none other
    # consumes this test database.
    wait_for(lambda: _liveness_runs() >= 2, timeout=90, what="liveness ticks")
    health = wait_for(
        lambda: (h := health_json(base)) is not None and h["status"] == "ok" and h,
        timeout=30, what="/healthz ok",
    )
    assert isinstance(health, dict), _logs(tmp_path)
    assert health["version"] == __version__
    assert health["database"]["status"] == "ok"
    assert health["database"]["vendor"] == "postgresql"
    assert health["broker"] == {"status": "ok", "transport": "redis",
                                "latency_ms": health["broker"]["latency_ms"]}
    assert health["periodic_jobs"]["liveness"]["runs"] >= 2
    assert "xworkmate.liveness" in _logs(tmp_path) and "succeeded" in _logs(tmp_path)


def test_a_clean_install_runs_the_service_on_postgresql_and_redis(
    real_services, installed_release, tmp_path
):
    bin_ = installed_release
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
    assert where.stdout.strip().startswith(str(bin_.parent)), where.stdout + where.stderr

    env = _service_env(tmp_path, bin_)
    xworkmate = str(bin_ / "xworkmate")
    # The migrations run once, as the compose file's migrate service and the pipeline's
    # deploy stage run them.
    migrated = subprocess.run([xworkmate, "manage", "migrate", "--noinput"], cwd=tmp_path,
                              env=env, capture_output=True, text=True, check=False, timeout=120)
    assert migrated.returncode == 0, migrated.stdout + migrated.stderr

    port = free_port()
    # As the systemd units and the compose file start them (D-K29).
    commands = {
        "web": [xworkmate, "serve", "--only", "web", "--bind", f"127.0.0.1:{port}",
                "--web-workers", "2"],
        "worker": [xworkmate, "serve", "--only", "worker", "--concurrency", "2"],
        "beat": [xworkmate, "serve", "--only", "beat"],
    }
    procs = []
    try:
        for name, command in commands.items():
            with (tmp_path / f"{name}.log").open("wb") as log:
                procs.append(subprocess.Popen(command, cwd=tmp_path, env=env, stdout=log,
                                              stderr=log))
        _check_the_service(tmp_path, f"http://127.0.0.1:{port}")
        # Each became its process (exec): gunicorn and celery, not a python waiting on them.
        for proc in procs:
            assert proc.poll() is None, _logs(tmp_path)
            argv = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")
            assert b"gunicorn" in argv or b"celery" in argv, argv
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def test_the_procfile_runs_under_honcho_and_waits_for_the_migrations(
    real_services, installed_release, tmp_path
):
    """deploy/Procfile as documented: its web process migrates, worker and beat wait."""
    honcho = shutil.which("honcho", path=str(Path(sys.executable).parent))
    assert honcho, "honcho comes with the dev extras"
    env = _service_env(tmp_path, installed_release)
    port = free_port()
    # The environment file is the variables above; honcho gives the first process (web)
    # the port it is told as $PORT.
    env_file = tmp_path / "xworkmate.env"
    env_file.write_text("".join(f"{k}={env[k]}\n" for k in (
        "DATABASE_URL", "CELERY_BROKER_URL", "XWORKMATE_HOME", "XWORKMATE_CONFIG")), encoding="utf-8")
    with (tmp_path / "honcho.log").open("wb") as log:
        proc = subprocess.Popen(
            [honcho, "start", "-f", str(ROOT / "deploy" / "Procfile"), "-e", str(env_file),
             "-d", str(tmp_path), "-p", str(port)],
            cwd=tmp_path, env=env, stdout=log, stderr=log, start_new_session=True,
        )
    try:
        _check_the_service(tmp_path, f"http://127.0.0.1:{port}")
        assert proc.poll() is None, _logs(tmp_path)
    finally:
        stop_group(proc, timeout=30)
