"""The soak of the embedded default, shared by bench/soak.py and its short CI version.

It starts the whole service as `manage.py xworkmate run` does (a fresh data home,
SQLite and the file broker, a free port), with plan runs and long-run progress
routed to a webhook channel whose receiver is a real local HTTP server. For the
given time a few threads drive load at once: long tasks' heartbeats
(touch-progress, work-cycle-tick), plan runs now on confirmed plans and the
deliveries they cause, and /healthz. At the end it waits for the outbox to
drain and reads what it needs to judge the run (D-K20): the supervisor's
restarts and the worker's pid (`processes` on /healthz, D-K24), the worker's
log, the messages enqueued and delivered, the runs requested and recorded.

Only the standard library: it drives the service from outside, as a client.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench._common import free_port, request

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
# What the worker log must never show: a consumer that read a partial message
# (celery/kombu#1551) or any crash.
LOG_ERRORS = ("Traceback", "JSONDecodeError", "Unrecoverable error", "WorkerLostError")


class Receiver:
    """A webhook receiver: answers 200 to every POST and keeps the idempotency keys."""

    def __init__(self) -> None:
        self.posts = 0
        self.keys: set[str] = set()
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                with receiver.lock:
                    receiver.posts += 1
                    receiver.keys.add(self.headers.get("Idempotency-Key", ""))
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


class Client:
    """JSON over HTTP to the service, one connection per request (sync gunicorn workers)."""

    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.token = token

    def call(self, method: str, path: str, body: object | None = None) -> tuple[int, Any]:
        status, raw = request(self.port, self.token, method, path, body, timeout=60)
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, raw.decode(errors="replace")


def _config(receiver_port: int) -> str:
    # Plan runs and long-run progress go out over HTTP; the rest keeps the defaults.
    return f"""
[delivery.routes]
"plans.run" = "soak-webhook"
"longrun.progress" = "soak-webhook"

[[delivery.channels]]
name = "soak-webhook"
kind = "webhook"
url = "http://127.0.0.1:{receiver_port}/hook"
secret = "soak"
connect_timeout = "5s"
read_timeout = "10s"
"""


class Service:
    """`manage.py xworkmate run` on a fresh data home in `base`, on a free port."""

    def __init__(self, base: Path, receiver_port: int) -> None:
        self.base = base
        self.home = base / "home"
        self.port = free_port()
        self.log_path = base / "run.log"
        config = base / "xworkmate.toml"
        config.write_text(_config(receiver_port), encoding="utf-8")
        (base / "user").mkdir(exist_ok=True)
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("XWORKMATE_CONFIG", "DATABASE_URL", "CELERY_BROKER_URL",
                         "DJANGO_SETTINGS_MODULE")
        }
        self.env = env | {
            "XWORKMATE_PORT": str(self.port),
            "XWORKMATE_HOME": str(self.home),
            "XWORKMATE_CONFIG": str(config),
            "XWORKMATE_ADMIN_PASSWORD": "soak-test-pw-9417",
            "HOME": str(base / "user"),
        }
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 180.0) -> None:
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                [PYTHON, "manage.py", "xworkmate", "run"], cwd=ROOT, env=self.env,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"xworkmate run exited early:\n{self.log()}")
            with contextlib.suppress(OSError, ValueError):
                status, body = self.health()
                processes = body.get("processes", {}) if isinstance(body, dict) else {}
                if status == 200 and processes:
                    return
            time.sleep(0.5)
        raise RuntimeError(f"/healthz did not answer 200 within {timeout}s:\n{self.log()}")

    def health(self) -> tuple[int, Any]:
        return Client(self.port, "").call("GET", "/healthz")

    def api_key(self) -> str:
        scopes = ["plans:write", "delivery:write", "longrun:write", "gateway:write"]
        args = [PYTHON, "manage.py", "xworkmate", "apikey", "create", "--name", "soak"]
        for scope in scopes:
            args += ["--scope", scope]
        out = subprocess.run(
            args, cwd=ROOT, env=self.env, check=True, capture_output=True, text=True
        )
        return out.stdout.strip().splitlines()[-1]

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def outbox_by_status(self, *, pushed: bool) -> dict[str, int]:
        """The outbox messages by status, read from the SQLite file itself: those the
        service pushes (the webhook), or those on the record channel, which wait for
        the bridge to fetch them (the watchdog's recoveries, say) and are never pushed."""
        db = sqlite3.connect(f"file:{self.home / 'xworkmate.sqlite3'}?mode=ro", uri=True,
                             timeout=30)
        try:
            rows = db.execute(
                "SELECT status, COUNT(*) FROM delivery_message WHERE (channel = 'record') = ? "
                "GROUP BY status",
                (0 if pushed else 1,),
            ).fetchall()
        finally:
            db.close()
        return {str(status): int(n) for status, n in rows}


@dataclass
class Counters:
    lock: threading.Lock = field(default_factory=threading.Lock)
    requests: int = 0
    errors: list[str] = field(default_factory=list)
    runs_requested: int = 0
    heartbeats: int = 0
    health_down: int = 0

    def count(self, status: int, what: str, body: Any, ok: Callable[[int], bool]) -> bool:
        with self.lock:
            self.requests += 1
            if ok(status):
                return True
            if len(self.errors) < 50:
                self.errors.append(f"{what}: HTTP {status} {str(body)[:300]}")
            return False


@dataclass
class Result:
    minutes: float
    requests: int
    heartbeats: int
    messages_enqueued: int
    messages_by_status: dict[str, int]
    messages_delivered: int
    messages_for_the_bridge: dict[str, int]
    runs_requested: int
    runs_recorded: int
    worker_restarts: int
    beat_restarts: int
    worker_pid_first: int | None
    worker_pid_last: int | None
    worker_deaths: int
    log_errors: list[str]
    errors: list[str]
    health_down: int

    @property
    def ok(self) -> bool:
        return (
            self.worker_deaths == 0
            and self.worker_restarts == 0
            and self.beat_restarts == 0
            and not self.log_errors
            and not self.errors
            and self.messages_delivered == self.messages_enqueued
            and self.messages_by_status.get("sent", 0) == self.messages_enqueued
            and self.runs_recorded == self.runs_requested
        )

    def table(self) -> str:
        rows = [
            ("minutes", f"{self.minutes:.1f}"),
            ("requests", str(self.requests)),
            ("heartbeats (touch-progress + work-cycle-tick)", str(self.heartbeats)),
            ("messages enqueued for the webhook", str(self.messages_enqueued)),
            ("messages delivered (receiver)", str(self.messages_delivered)),
            ("webhook messages by status", json.dumps(self.messages_by_status, sort_keys=True)),
            ("record-channel messages (for the bridge)",
             json.dumps(self.messages_for_the_bridge, sort_keys=True)),
            ("plan runs requested", str(self.runs_requested)),
            ("plan runs recorded ok", str(self.runs_recorded)),
            ("worker deaths", str(self.worker_deaths)),
            ("restarts (worker / beat)", f"{self.worker_restarts} / {self.beat_restarts}"),
            ("worker pid (start / end)", f"{self.worker_pid_first} / {self.worker_pid_last}"),
            ("errors (HTTP / log)", f"{len(self.errors)} / {len(self.log_errors)}"),
            ("/healthz samples answering 503", str(self.health_down)),
        ]
        width = max(len(name) for name, _ in rows)
        return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)


def _worker(body: Any) -> dict[str, Any]:
    processes = body.get("processes", {}) if isinstance(body, dict) else {}
    children = processes.get("children", processes)
    worker = children.get("worker", {}) if isinstance(children, dict) else {}
    return worker if isinstance(worker, dict) else {}


SESSION = "agent:soak:user:u-{n}:direct:chat-{n}"


def _plan(client: Client, counters: Counters, n: int) -> str:
    session = SESSION.format(n=n)
    status, body = client.call("POST", "/api/plans/propose", {
        "sessionKey": session, "turnId": "run-1", "taskName": f"浸泡计划 {n}",
        "persona": "库存管理助理", "objective": "长时间运行不掉线", "result": "每次运行都送达",
        "steps": ["读取库存表并生成日报"],
        "schedule": {"kind": "cron", "expr": "0 9 * * *", "tz": "Asia/Shanghai"},
    })
    if not counters.count(status, "propose", body, lambda s: s == 201 or s == 200):
        raise RuntimeError(f"propose refused: {status} {body}")
    task = str(body["plan"]["taskId"])
    status, body = client.call("POST", f"/api/plans/{task}/confirm",
                               {"revision": 1, "message": "确认", "turnId": "run-2"})
    if not counters.count(status, "confirm", body, lambda s: s == 200):
        raise RuntimeError(f"confirm refused: {status} {body}")
    return task


def _plan_runner(client: Client, counters: Counters, task: str, stop: threading.Event) -> None:
    while not stop.is_set():
        status, body = client.call("POST", f"/api/plans/{task}/run", {})
        if counters.count(status, "plans run", body, lambda s: s == 200):
            if isinstance(body, dict) and body.get("ran"):
                with counters.lock:
                    counters.runs_requested += 1
            else:
                # The previous run still waits for its delivery: give the worker time.
                stop.wait(0.5)
        stop.wait(0.2)


def _long_task(n: int, state: str) -> dict[str, str]:
    # The silent ones' progress is due at every one-minute monitor tick.
    every = "10s" if n % 2 == 1 else "1m"
    return {
        "task": f"浸泡长任务 {n}", "origin_session_key": f"agent:soak:longrun:{n}",
        "state": state, "session": f"浸泡会话 {n}", "goal": "长时间运行",
        "done_when": "浸泡结束", "blocked_when": "工作进程死亡", "boundary": "本机",
        "next_check": "30m", "note": "开始", "progress_every": every,
    }


def _heartbeats(client: Client, counters: Counters, n: int, stop: threading.Event) -> None:
    task = f"浸泡长任务 {n}"
    status, body = client.call("POST", "/api/longrun/task-state/set", _long_task(n, "executing"))
    if not counters.count(status, "task-state set", body, lambda s: s == 200):
        return
    # Odd tasks never touch their progress, so the monitors find it due.
    silent = n % 2 == 1
    step = 0
    while not stop.is_set():
        step += 1
        # exit code 1 (an update is due) is an answer, not an error
        status, body = client.call("POST", "/api/longrun/work-cycle-tick",
                                   {"task": task, "step": f"第 {step} 步"})
        if counters.count(status, "work-cycle-tick", body, lambda s: s == 200):
            with counters.lock:
                counters.heartbeats += 1
        if silent:
            # The beat's longrun-foreground sends this task's progress (a
            # longrun.progress message over the webhook) each minute.
            stop.wait(1.0)
            continue
        status, body = client.call("POST", "/api/longrun/task-state/touch-progress",
                                   {"task": task, "note": f"第 {step} 步"})
        if counters.count(status, "touch-progress", body, lambda s: s == 200):
            with counters.lock:
                counters.heartbeats += 1
        stop.wait(1.0)


def _prober(service: Service, counters: Counters, pids: list[int],
            stop: threading.Event) -> None:
    while not stop.is_set():
        status, body = service.health()
        if status == 503:
            # "down" names a check (a periodic job late behind a long queue, say):
            # counted and shown, but the soak judges the processes, not the lag.
            with counters.lock:
                counters.requests += 1
                counters.health_down += 1
        else:
            counters.count(status, "healthz", body, lambda s: s == 200)
        pid = _worker(body).get("pid")
        if isinstance(pid, int) and (not pids or pids[-1] != pid):
            pids.append(pid)
        stop.wait(2.0)


def _runs_recorded(client: Client, task: str) -> int:
    ok = 0
    offset = 0
    while True:
        status, body = client.call("GET", f"/api/plans/{task}/runs?limit=200&offset={offset}")
        if status != 200:
            raise RuntimeError(f"runs of {task}: {status} {body}")
        entries = body["entries"]
        ok += sum(1 for e in entries if e.get("action") == "finished" and e.get("status") == "ok")
        offset += len(entries)
        if not entries or offset >= int(body["total"]):
            return ok


@contextlib.contextmanager
def _base(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix="xworkmate-soak-") as tmp:
        yield Path(tmp)


def soak(minutes: float, *, plans: int = 2, longruns: int = 3, base: Path | None = None,
         drain_timeout: float = 180.0, progress: Callable[[str], None] | None = None) -> Result:
    """Run the soak for `minutes` and judge it (see the module's docstring)."""
    say = progress or (lambda line: None)
    with _base(base) as root, Receiver() as receiver:
        service = Service(root, receiver.port)
        service.start()
        try:
            client = Client(service.port, service.api_key())
            counters = Counters()
            tasks = [_plan(client, counters, n) for n in range(plans)]
            stop = threading.Event()
            pids: list[int] = []
            threads = [threading.Thread(target=_prober, args=(service, counters, pids, stop))]
            threads += [threading.Thread(target=_plan_runner, args=(client, counters, t, stop))
                        for t in tasks]
            threads += [threading.Thread(target=_heartbeats, args=(client, counters, n, stop))
                        for n in range(longruns)]
            started = time.monotonic()
            for thread in threads:
                thread.start()
            end = started + minutes * 60
            while time.monotonic() < end:
                time.sleep(min(30.0, max(0.0, end - time.monotonic())))
                say(f"{(time.monotonic() - started) / 60:.1f} min: {counters.requests} requests, "
                    f"{counters.runs_requested} runs, {receiver.posts} deliveries, "
                    f"{len(counters.errors)} errors")
            stop.set()
            for thread in threads:
                thread.join(timeout=120)
            elapsed = (time.monotonic() - started) / 60
            # Finish the long tasks, so the beat's monitors stop adding progress
            # messages and the counts below are final once the outbox is empty.
            for n in range(longruns):
                status, body = client.call("POST", "/api/longrun/task-state/set",
                                           _long_task(n, "done"))
                counters.count(status, "task-state done", body, lambda s: s == 200)
            # Let the worker (or delivery-dispatch) send what is still pending.
            deadline = time.monotonic() + drain_timeout
            while time.monotonic() < deadline:
                # The webhook's messages only: the record channel's wait for a bridge.
                waiting = service.outbox_by_status(pushed=True)
                if not waiting.get("pending") and not waiting.get("unknown"):
                    break
                time.sleep(1.0)
            runs_recorded = sum(_runs_recorded(client, t) for t in tasks)
            _, body = service.health()
            processes = body.get("processes", {}) if isinstance(body, dict) else {}
            children = processes.get("children", processes)
            worker = _worker(body)
            beat = children.get("beat", {}) if isinstance(children, dict) else {}
            final_pid = worker.get("pid")
            if isinstance(final_pid, int) and (not pids or pids[-1] != final_pid):
                pids.append(final_pid)
        finally:
            service.stop()
        log = service.log()
        deaths = len(re.findall(r"xworkmate: worker exited with code", log))
        log_errors = [line for line in log.splitlines()
                      if any(marker in line for marker in LOG_ERRORS)]
        by_status = service.outbox_by_status(pushed=True)
        return Result(
            minutes=elapsed,
            requests=counters.requests,
            heartbeats=counters.heartbeats,
            messages_enqueued=sum(by_status.values()),
            messages_by_status=by_status,
            messages_delivered=len(receiver.keys),
            messages_for_the_bridge=service.outbox_by_status(pushed=False),
            runs_requested=counters.runs_requested,
            runs_recorded=runs_recorded,
            worker_restarts=int(worker.get("restarts", 0) or 0),
            beat_restarts=int(beat.get("restarts", 0) or 0) if isinstance(beat, dict) else 0,
            worker_pid_first=pids[0] if pids else None,
            worker_pid_last=pids[-1] if pids else None,
            worker_deaths=deaths + max(0, len(pids) - 1),
            log_errors=log_errors[:50],
            errors=list(counters.errors),
            health_down=counters.health_down,
        )
