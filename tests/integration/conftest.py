"""Integration tests: real PostgreSQL, real Redis, real Celery worker and beat processes.

`scripts/test` runs this folder with DATABASE_URL and CELERY_BROKER_URL
pointing at PostgreSQL and Redis; the tests refuse to run on anything else so
a green run always means the real services were used.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import redis
from django.conf import settings
from django.db import connection

import xworkmate.celery
from tests.conftest import ROOT, free_port

# The release files, built once per session for the install tests (issue 20).
from tests.integration.release import installed_release, release_files  # noqa: F401
from xworkmate.supervisor import WEB_WORKER_CLASS


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/integration/" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


@pytest.fixture
def real_services(transactional_db: None) -> None:
    if connection.vendor != "postgresql":
        pytest.fail("integration tests need DATABASE_URL=postgresql://... (see scripts/test)")
    if not settings.CELERY_BROKER_URL.startswith("redis://"):
        pytest.fail("integration tests need CELERY_BROKER_URL=redis://... (see scripts/test)")


def clear_broker() -> None:
    """Nothing left in Redis by an earlier test (a task for a message id reused here)."""
    xworkmate.celery.app.control.purge()
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    # A task a killed worker had taken: kombu would restore it after the visibility timeout.
    client.delete("unacked", "unacked_index")
    client.close()


def database_url() -> str:
    db = connection.settings_dict
    password = f":{db['PASSWORD']}" if db["PASSWORD"] else ""
    return (
        f"postgresql://{db['USER']}{password}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
        f"/{db['NAME']}"
    )


def wait_for(predicate: Callable[[], object], *, timeout: float, what: str) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"timed out after {timeout}s waiting for {what}")


def health_json(base: str) -> Any:
    """/healthz's JSON (its 503 too), or None while nothing answers."""
    try:
        with urllib.request.urlopen(base + "/healthz", timeout=5) as answer:
            return json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return json.loads(error.read())
    except OSError:
        return None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


class CeleryProcesses:
    """Start `celery worker` / `celery beat` as separate processes on the test database.

    They use the run's broker, or `broker_url` (a fault test's own Redis).
    """

    def __init__(self, tmp_path: Path, *, broker_url: str | None = None) -> None:
        self.tmp_path = tmp_path
        self.broker_url = broker_url
        self.procs: list[subprocess.Popen[bytes]] = []

    def env(self, config_text: str) -> dict[str, str]:
        config = self.tmp_path / "xworkmate.toml"
        config.write_text(config_text, encoding="utf-8")
        return {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "xworkmate.settings",
            "XWORKMATE_CONFIG": str(config),
            "XWORKMATE_HOME": str(self.tmp_path / "home"),
            "DATABASE_URL": database_url(),
            "CELERY_BROKER_URL": self.broker_url or settings.CELERY_BROKER_URL,
        }

    def start(
        self,
        role: str,
        config_text: str = "",
        *,
        name: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.Popen[bytes]:
        """Start `role`; `name` (default: the role) names its log and beat schedule files,
        and a worker's node; `env` is added to its environment."""
        name = name or role
        args = [sys.executable, "-m", "celery", "-A", "xworkmate.celery", role, "--loglevel", "INFO"]
        if role == "worker":
            args += ["--concurrency", "2", "--hostname", f"test-{os.getpid()}-{name}@%h"]
        else:
            args += ["--schedule", str(self.tmp_path / f"{name}-schedule")]
        log = (self.tmp_path / f"{name}.log").open("wb")
        proc = subprocess.Popen(
            args, env=self.env(config_text) | dict(env or {}), cwd=ROOT, stdout=log, stderr=log
        )
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def logs(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in self.tmp_path.glob("*.log"))


@pytest.fixture
def celery_processes(real_services: None, tmp_path: Path) -> Iterator[CeleryProcesses]:
    processes = CeleryProcesses(tmp_path)
    yield processes
    processes.stop()


@contextlib.contextmanager
def running_gunicorn(
    tmp_path: Path,
    config_text: str,
    *,
    workers: int,
    broker_url: str | None = None,
    db_url: str | None = None,
) -> Iterator[str]:
    """gunicorn serving the service on PostgreSQL with `config_text`; yields its base URL.

    It uses the test database and the run's broker, or `db_url` and
    `broker_url` (a fault test's own cluster or Redis). Its log is
    tmp_path / "gunicorn.log"; it stops when the block ends.
    """
    config = tmp_path / "xworkmate.toml"
    config.write_text(config_text, encoding="utf-8")
    port = free_port()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "xworkmate.settings",
           "XWORKMATE_CONFIG": str(config), "XWORKMATE_HOME": str(tmp_path / "home"),
           "DATABASE_URL": db_url or database_url()}
    if broker_url is not None:
        env["CELERY_BROKER_URL"] = broker_url
    with (tmp_path / "gunicorn.log").open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "xworkmate.wsgi:application", "--bind",
             f"127.0.0.1:{port}", "--workers", str(workers), "--worker-class", WEB_WORKER_CLASS,
             "--control-socket", str(tmp_path / "gunicorn.ctl")],
            cwd=ROOT, env=env, stdout=out, stderr=out,
        )
    base = f"http://127.0.0.1:{port}"

    def up() -> bool:
        try:
            urllib.request.urlopen(base + "/healthz", timeout=2)
        except urllib.error.HTTPError:
            return True  # 503 is fine here: no beat runs in these tests
        except OSError:
            return False
        return True

    try:
        wait_for(up, timeout=60, what="gunicorn to answer")
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)
