"""A redis-server of the test's own, on a free port in a temporary directory.

It can be stopped (SIGTERM), killed (SIGKILL), started again on the same port,
frozen (SIGSTOP: the kernel still accepts connections, nothing answers) and
thawed (SIGCONT), always by its own PID.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from tests.support.ports import free_port

__all__ = ["OwnRedis", "own_redis"]


class OwnRedis:
    """One redis-server the test owns; `url` stays the same across restarts."""

    def __init__(self, directory: Path, *, port: int | None = None) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is needed for this test")
        self.binary = binary
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.frozen = False

    @property
    def pid(self) -> int:
        assert self.process is not None, "not running"
        return self.process.pid

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self, *, timeout: float = 20) -> None:
        """Start it (again, on the same port) and wait until it answers PING."""
        assert self.process is None or self.process.poll() is not None, "already running"
        log = (self.directory / "redis.log").open("ab")
        # No persistence: a restart is an empty Redis, as after a crash without AOF.
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.directory)],
            stdout=log, stderr=log,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while not self.answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the test's own redis-server did not start on {self.port}")
            time.sleep(0.05)

    def answers(self) -> bool:
        done = subprocess.run(
            ["redis-cli", "-p", str(self.port), "ping"], capture_output=True, check=False,
            timeout=10,
        )
        return done.stdout.strip() == b"PONG"

    def stop(self, *, sig: signal.Signals = signal.SIGTERM) -> None:
        """End it with `sig` (SIGTERM: a clean shutdown; SIGKILL: a crash) and reap it."""
        if self.process is None or self.process.poll() is not None:
            return
        if self.frozen:
            self.thaw()
        self.process.send_signal(sig)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def kill(self) -> None:
        self.stop(sig=signal.SIGKILL)

    def freeze(self) -> None:
        """SIGSTOP: connections are still accepted by the kernel, nothing is answered."""
        os.kill(self.pid, signal.SIGSTOP)
        self.frozen = True

    def thaw(self) -> None:
        os.kill(self.pid, signal.SIGCONT)
        self.frozen = False


@contextlib.contextmanager
def own_redis(directory: Path) -> Iterator[OwnRedis]:
    """A started OwnRedis, stopped (thawed first if frozen) when the block ends."""
    server = OwnRedis(directory)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@contextlib.contextmanager
def publishing_to(broker_url: str) -> Iterator[None]:
    """This process's publishes (an outbox's ask after commit) go to `broker_url`.

    A Celery app with the service's broker options, on the test's own Redis,
    is the current app for the block. Celery prefers CELERY_BROKER_URL from the
    environment to an app's own broker, and the integration run exports the
    shared Redis there: it is taken out for the block.
    """
    from celery import Celery

    import xworkmate.celery

    saved = os.environ.pop("CELERY_BROKER_URL", None)
    from django.conf import settings

    # What a publish reads of the service's settings (the broker's bounds, D-K23).
    app = Celery("own-redis", broker=broker_url, set_as_current=False)
    app.conf.broker_transport_options = settings.CELERY_BROKER_TRANSPORT_OPTIONS
    app.conf.broker_connection_timeout = settings.CELERY_BROKER_CONNECTION_TIMEOUT
    app.set_current()
    try:
        yield
    finally:
        xworkmate.celery.app.set_current()
        app.close()
        if saved is not None:
            os.environ["CELERY_BROKER_URL"] = saved
