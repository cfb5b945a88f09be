"""Run web, worker and beat as one foreground unit (the README's first command).

Each child gets its own session so a terminal's Ctrl-C reaches only this
supervisor, which then stops the children in order (web first, so no new
work arrives; then beat; the worker last, so it finishes what it holds).
A worker or beat that dies on its own is started again after a pause that
doubles with each death in a row (1 s up to 60 s; a child that ran for 10
minutes starts the count afresh), each restart logged and counted in
`<data home>/supervisor.json`, which /healthz shows (D-K24). If the web server
dies, the others are stopped and the exit code says so: gunicorn already
restarts its own workers, and a master that is gone usually means its port is.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

STOP_TIMEOUT_SECONDS = 20.0
# The one child not started again when it dies (see above); beat and every worker are.
NOT_RESTARTED = "web"
FIRST_RESTART_DELAY = 1.0
MAX_RESTART_DELAY = 60.0
# A child that ran this long before dying counts as healthy: its backoff resets.
HEALTHY_RUN_SECONDS = 600.0
STATE_FILE = "supervisor.json"
RUN_LOCK = "run.lock"
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


def worker_names(processes: int) -> list[str]:
    """The supervised names of the Celery worker processes: `worker`, or `worker-1`..`-N`."""
    return ["worker"] if processes <= 1 else [f"worker-{n}" for n in range(1, processes + 1)]


def commands(
    *,
    bind: str,
    embedded_broker: bool,
    beat_schedule_file: str,
    home: Path,
    workers: int,
    worker_processes: int = 1,
    concurrency: int = 2,
    files_host: str = "",
) -> dict[str, list[str]]:
    """The argv of every process of the service: web, beat and the Celery workers.

    The one place that knows how gunicorn, the worker and beat are started:
    `xworkmate run`, `xworkmate serve` and the deployment files (systemd units,
    Procfile, compose file, which call `xworkmate serve --only ...`) all start
    these (issue 20).
    """
    py = sys.executable
    cmds: dict[str, list[str]] = {
        "web": [
            py,
            "-m",
            "gunicorn",
            "xworkmate.wsgi:application",
            "--bind",
            bind,
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
    }
    names = worker_names(worker_processes)

    def worker(node: str, *extra: str) -> list[str]:
        argv = [
            py,
            "-m",
            "celery",
            "-A",
            "xworkmate.celery",
            "worker",
            "--loglevel",
            "INFO",
            "--concurrency",
            str(concurrency),
            "--hostname",
            node,
            *extra,
        ]
        if embedded_broker:
            # The file broker has no broadcast queues: the cluster chatter is moot.
            argv += ["--without-mingle", "--without-gossip", "--without-heartbeat"]
        return argv

    for number, name in enumerate(names, start=1):
        # Each worker process needs a node name of its own on the broker.
        cmds[name] = worker("xworkmate@%h" if len(names) == 1 else f"xworkmate-{number}@%h")
    if files_host:
        # A workspace host's own worker (D-K31): only that host's file operations, so
        # it needs nothing but the database, the broker and the host's disk.
        cmds["files"] = worker(f"files-{files_host}@%h", "--queues", f"files@{files_host}")
    return cmds


def port_problem(host: str, port: int) -> str | None:
    """Why the web server could not listen on `host:port` (in use, not allowed), or None.

    Checked before anything starts, so a busy port is one line instead of a
    bootstrap, a worker and a beat started for a gunicorn that then retries and
    gives up (issue 22). SO_REUSEADDR, as gunicorn binds: a port in TIME_WAIT is free.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host.strip("[]"), port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return f"{host}:{port} is already in use (another service, or another run)"
            return f"cannot listen on {host}:{port}: {exc.strerror}"
    return None


class AlreadyRunning(RuntimeError):
    """Another `xworkmate run` holds this data home."""


@contextmanager
def run_lock(home: Path) -> Iterator[None]:
    """Hold `<home>/run.lock` for the life of one `xworkmate run` (D-K24).

    An advisory lock (flock): the kernel drops it when the process ends, however
    it ends, so a crash leaves no stale lock. A second run on the same data home
    is refused in one line, before anything starts.
    """
    home.mkdir(parents=True, exist_ok=True)
    path = home / RUN_LOCK
    handle = open(path, "a+", encoding="ascii")  # noqa: SIM115 (held for the whole run)
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            raise AlreadyRunning(
                f"another xworkmate run (pid {holder}) is using the data home {home}"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        yield
    finally:
        handle.close()


def restart_delay(deaths_in_a_row: int) -> float:
    """Seconds to wait before the n-th restart in a row (1, 2, 4, ... at most 60)."""
    return float(min(MAX_RESTART_DELAY, FIRST_RESTART_DELAY * 2 ** max(0, deaths_in_a_row - 1)))


class Supervisor:
    def __init__(
        self, cmds: Mapping[str, list[str]], env: Mapping[str, str], *, home: Path | None = None
    ) -> None:
        self.cmds = cmds
        self.env = dict(env)
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self.stop_requested = False
        self.state_file = None if home is None else home / STATE_FILE
        self.started_at: dict[str, float] = {}
        self.deaths_in_a_row: dict[str, int] = dict.fromkeys(cmds, 0)
        self.restarts: dict[str, int] = dict.fromkeys(cmds, 0)
        self.due: dict[str, float] = {}  # child -> when it is started again
        self.last_exit: dict[str, int] = {}

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stop_requested = True

    def _start(self, name: str) -> None:
        # Our own fixed argv (sys.executable -m ...), not user input.
        self.children[name] = subprocess.Popen(  # noqa: S603
            self.cmds[name], env=self.env, start_new_session=True
        )
        self.started_at[name] = time.monotonic()
        print(f"xworkmate: started {name} (pid {self.children[name].pid})", flush=True)

    def run(self) -> int:
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)
        for name in self.cmds:
            self._start(name)
        self._write_state()
        failed: str | None = None
        parent = os.getppid()
        while not self.stop_requested and failed is None:
            time.sleep(0.3)
            failed = self._check_children()
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

    def _check_children(self) -> str | None:
        """Restart what may be restarted; the name of a child that ends the service."""
        now = time.monotonic()
        for name, child in self.children.items():
            if name in self.due:
                if now >= self.due[name]:
                    del self.due[name]
                    self.restarts[name] += 1
                    self._start(name)
                    self._write_state()
                continue
            code = child.poll()
            if code is None:
                continue
            if name == NOT_RESTARTED:
                return name
            ran = now - self.started_at[name]
            self.deaths_in_a_row[name] = (
                1 if ran >= HEALTHY_RUN_SECONDS else self.deaths_in_a_row[name] + 1
            )
            delay = restart_delay(self.deaths_in_a_row[name])
            self.due[name] = now + delay
            self.last_exit[name] = code
            print(
                f"xworkmate: {name} exited with code {code} after {ran:.0f}s; "
                f"restarting it in {delay:.0f}s",
                flush=True,
            )
            self._write_state()
        return None

    def _write_state(self) -> None:
        """What /healthz shows of the children: restarts and the last exit codes."""
        if self.state_file is None:
            return
        state = {
            "pid": os.getpid(),
            "children": {
                name: {
                    "pid": self.children[name].pid if name in self.children else None,
                    "running": name not in self.due,
                    "restarts": self.restarts[name],
                    **({"last_exit_code": self.last_exit[name]} if name in self.last_exit else {}),
                }
                for name in self.cmds
            },
        }
        partial = self.state_file.with_name(f".{STATE_FILE}.partial")
        try:
            partial.write_text(json.dumps(state), encoding="utf-8")
            os.replace(partial, self.state_file)
        except OSError as exc:  # a full disk must not stop the service
            print(f"xworkmate: cannot write {self.state_file}: {exc}", flush=True)

    def stop(self) -> None:
        # Web first (no new work), then beat, the workers last (they finish what they hold).
        order = sorted(self.children, key=lambda name: (name != "web", name != "beat", name))
        for name in order:
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
        if self.state_file is not None:
            self.state_file.unlink(missing_ok=True)
