"""Run web, worker and beat as one foreground unit (the README's first command).

Each child gets its own session so a terminal's Ctrl-C reaches only this
supervisor, which then stops the children in order (web first, so no new
work arrives; then beat; the worker last, so it finishes what it holds).
If any child dies on its own, the others are stopped too and the exit code
says so: a half-running service is worse than a stopped one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from types import FrameType

STOP_TIMEOUT_SECONDS = 20.0
MAX_AUTO_WEB_WORKERS = 12
CONTROL_SOCKET = "gunicorn.ctl"
# gunicorn's sync worker, its own refusals (a request line too long...) in JSON (D-K15).
WEB_WORKER_CLASS = "xworkmate.webserver.JsonErrorWorker"
# sockaddr_un.sun_path holds 108 bytes on Linux (104 on the BSDs), the
# terminating NUL included.
_MAX_SOCKET_PATH_BYTES = 103


def web_workers(configured: int, cpu_count: int | None) -> int:
    """The number of gunicorn workers: `service.web_workers`, or from the CPU count.

    Sync workers serve one request each, so a slow call (a large export, a
    long hash) holds one worker; 2 x CPUs + 1 keeps the others answering.
    The cap bounds memory (each worker is a full Django process) and the
    writers contending for a SQLite file.
    """
    if configured > 0:
        return configured
    return min(2 * max(cpu_count or 1, 1) + 1, MAX_AUTO_WEB_WORKERS)


def control_socket_args(home: Path) -> list[str]:
    """gunicorn's control socket in the data home, not in $HOME/.gunicorn.

    One per data home, so two services on one machine (or a test run beside
    a developer's service) never replace each other's socket. A data home too
    deep for a Unix socket path runs without one: the socket is optional
    (gunicornc), the service is not.
    """
    path = home / CONTROL_SOCKET
    if len(os.fsencode(path)) > _MAX_SOCKET_PATH_BYTES:
        return ["--no-control-socket"]
    return ["--control-socket", str(path)]


def commands(
    *, port: int, embedded_broker: bool, beat_schedule_file: str, home: Path, workers: int
) -> dict[str, list[str]]:
    py = sys.executable
    worker = [
        py,
        "-m",
        "celery",
        "-A",
        "xworkmate.celery",
        "worker",
        "--loglevel",
        "INFO",
        "--concurrency",
        "2",
        "--hostname",
        "xworkmate@%h",
    ]
    if embedded_broker:
        # The file broker has no broadcast queues; the cluster chatter is moot
        # with one worker anyway.
        worker += ["--without-mingle", "--without-gossip", "--without-heartbeat"]
    return {
        "web": [
            py,
            "-m",
            "gunicorn",
            "xworkmate.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--worker-class",
            WEB_WORKER_CLASS,
            *control_socket_args(home),
            "--access-logfile",
            "-",
            "--graceful-timeout",
            "10",
        ],
        "beat": [
            py,
            "-m",
            "celery",
            "-A",
            "xworkmate.celery",
            "beat",
            "--loglevel",
            "INFO",
            "--schedule",
            beat_schedule_file,
        ],
        "worker": worker,
    }


class Supervisor:
    def __init__(self, cmds: Mapping[str, list[str]], env: Mapping[str, str]) -> None:
        self.cmds = cmds
        self.env = dict(env)
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self.stop_requested = False

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stop_requested = True

    def run(self) -> int:
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)
        for name, cmd in self.cmds.items():
            # Our own fixed argv (sys.executable -m ...), not user input.
            self.children[name] = subprocess.Popen(  # noqa: S603
                cmd, env=self.env, start_new_session=True
            )
            print(f"xworkmate: started {name} (pid {self.children[name].pid})", flush=True)
        failed: str | None = None
        parent = os.getppid()
        while not self.stop_requested and failed is None:
            time.sleep(0.3)
            failed = next((n for n, p in self.children.items() if p.poll() is not None), None)
            # If whoever started us (make, a shell) was killed, we were
            # re-parented: stop too rather than leave an orphaned service.
            if os.getppid() != parent:
                print("xworkmate: parent process is gone; stopping", flush=True)
                self.stop_requested = True
        if failed:
            code = self.children[failed].returncode
            print(f"xworkmate: {failed} exited with code {code}; stopping the rest", flush=True)
        self.stop()
        return 1 if failed else 0

    def stop(self) -> None:
        for name in ("web", "beat", "worker"):
            child = self.children.get(name)
            if child is None or child.poll() is not None:
                continue
            child.send_signal(signal.SIGTERM)
            try:
                child.wait(timeout=STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                print(f"xworkmate: {name} did not stop in time; killing it", flush=True)
                child.kill()
                child.wait()
            print(f"xworkmate: stopped {name}", flush=True)
