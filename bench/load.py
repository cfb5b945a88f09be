"""Load: the production profile on PostgreSQL and Redis under 16 mixed clients (issue 21).

Usage: python bench/load.py [--clients 16] [--seconds 60] [--web-workers 5]

Run by hand, never by the tests. Loopback only, and bounded: it starts a PostgreSQL
cluster and a redis-server of its own on free ports (tests/support: initdb in a
temporary folder, as the `postgres` account when run as root), migrates, then runs
`xworkmate serve` (gunicorn, one Celery worker, one beat) against them, and stops
all of it, by PID, when done.

Each client is a process of its own and loops over a mix: session.prepare and
tasks.get through the gateway, a long task's work-cycle-tick and touch-progress
(its heartbeat), reads of a plan and of the plans list, and every tenth round a
plan proposed and confirmed. The table shows, per call, requests, requests/s and
p50/p99 latency, and the errors (anything but the call's success status), which
must be 0; and the most database connections the service held at once, sampled
every second from pg_stat_activity. When a call failed, the service's log is kept
(its path is printed) and the tracebacks in it are printed under the table: the
run's folder is removed, and with it what the service said about the error.

Measured here (2 CPUs, the defaults):

    call                requests    req/s   p50 ms   p99 ms  errors
    plan read               2973     49.1     53.3     84.6       0
    plans confirm            288      4.8     98.9    155.3       0
    plans list              2973     49.1     60.3     90.2       0
    plans propose            304      5.0     84.6    196.6       0
    session.prepare         2973     49.1     51.2     84.6       0
    task-state set            16      0.3    169.2    266.4       0
    tasks.get               2973     49.1     43.9     72.9       0
    touch-progress          2973     49.1     44.7     74.4       0
    work-cycle-tick         2973     49.1     44.6     75.3       0
    all                    18446    304.4                         0
    most database connections at once: 9

One run since (2026-12-06, 261.6 requests/s) had one client's first plan proposal
answered 500 among 16 proposed at once, and that client's 163 reads of the plan it
never got answered 404. The log went with the run's folder, so the cause was
found by reading the write path, not in the log: two first proposals making the
workspace's archives/ directory at once (the loser's mkdir raised), the one
step all 16 first proposals share that had no guard against the race. Fixed,
with tests that make the directory, or a symlink, between the writer's lstat
and its mkdir (tests/plans/test_planfile.py). Fifteen runs after the one with
the 500, with 16 and 32 clients, had no error (one of them after the fix: 192.6
requests/s).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._common import (  # noqa: E402 (needs ROOT on the path)
    PYTHON,
    api_key,
    free_port,
    manage,
    request,
    wait_ready,
)
from tests.support.own_postgres import own_postgres  # noqa: E402
from tests.support.own_redis import own_redis  # noqa: E402

SCOPES = ("gateway:write", "plans:write", "longrun:write")
Sample = tuple[str, float, bool]



def _long_task(client: int, state: str) -> dict[str, str]:
    return {
        "task": f"负载长任务 {client}", "origin_session_key": f"agent:load:longrun:{client}",
        "state": state, "session": f"负载会话 {client}", "goal": "负载下的心跳",
        "done_when": "负载结束", "blocked_when": "服务无响应", "boundary": "本机",
        "next_check": "30m", "note": "开始", "progress_every": "3m",
    }


def _proposal(client: int, i: int) -> dict[str, object]:
    return {
        "sessionKey": f"agent:load:user:u-{client}:direct:chat-{client}", "turnId": f"t-{i}-1",
        "taskName": f"负载计划 {client}-{i}", "persona": "库存管理助理", "objective": "负载测试",
        "result": "计划被确认", "steps": ["读取库存表并生成日报"],
        "schedule": {"kind": "cron", "expr": "0 9 * * *", "tz": "Asia/Shanghai"},
    }


def _client(args: tuple[int, str, int, float]) -> list[Sample]:
    port, token, client, seconds = args
    samples: list[Sample] = []

    def call(name: str, method: str, path: str, body: object | None, ok: int = 200) -> Any:
        """The answer's JSON when it is the call's success, else None (counted as an error)."""
        start = time.perf_counter()
        status, data = request(port, token, method, path, body)
        samples.append((name, time.perf_counter() - start, status == ok))
        if status != ok:
            samples.append((f"! {name}: HTTP {status} {data[:300].decode(errors='replace')}", 0.0,
                            True))
            return None
        return json.loads(data) if data else {}

    call("task-state set", "POST", "/api/longrun/task-state/set", _long_task(client, "executing"))
    proposed = call("plans propose", "POST", "/api/plans/propose", _proposal(client, 0), ok=201)
    plan = proposed["plan"]["taskId"] if proposed else "00000000-0000-0000-0000-000000000000"
    deadline = time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < deadline:
        i += 1
        thread = f"thread-{client}-{i % 20}"
        call("session.prepare", "POST", "/gateway/xworkmate.session.prepare", {
            "schemaVersion": 1, "appThreadKey": thread,
            "openclawSessionKey": f"agent:main:{thread}", "runId": f"load-{client}-{i}"})
        call("tasks.get", "POST", "/gateway/xworkmate.tasks.get",
             {"appThreadKey": thread, "runId": f"load-{client}-{i}", "includeArtifacts": False})
        call("work-cycle-tick", "POST", "/api/longrun/work-cycle-tick",
             {"task": f"负载长任务 {client}", "step": f"第 {i} 步"})
        call("touch-progress", "POST", "/api/longrun/task-state/touch-progress",
             {"task": f"负载长任务 {client}", "note": f"第 {i} 步"})
        call("plan read", "GET", f"/api/plans/{plan}", None)
        call("plans list", "GET", "/api/plans?limit=20", None)
        if i % 10 == 0:
            body = call("plans propose", "POST", "/api/plans/propose", _proposal(client, i), ok=201)
            if body:
                task, revision = body["plan"]["taskId"], body["plan"]["revision"]["number"]
                call("plans confirm", "POST", f"/api/plans/{task}/confirm",
                     {"revision": revision, "message": "确认", "turnId": f"t-{i}-2"})
    return samples


def _connections(url: str, stop: threading.Event, most: list[int]) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        while not stop.wait(1.0):
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid()"
            ).fetchone()
            most[0] = max(most[0], int(row[0]) if row else 0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--web-workers", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="xworkmate-load-") as tmp, own_postgres() as cluster, \
            own_redis(Path(tmp) / "redis") as broker:
        cluster.createdb("xworkmate_load")
        db_url = cluster.url("xworkmate_load")
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        config = Path(tmp) / "xworkmate.toml"
        config.write_text(f'[service]\nlanguage_code = "en"\n[workspace]\nroots = ["{workspace}"]\n'
                          f'[plans]\nworkspace = "{workspace}"\n', encoding="utf-8")
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "xworkmate.settings",
               "XWORKMATE_HOME": str(Path(tmp) / "home"), "XWORKMATE_CONFIG": str(config),
               "DATABASE_URL": db_url, "CELERY_BROKER_URL": broker.url(0)}
        manage(env, "migrate", "--noinput")
        token = api_key(env, *SCOPES)
        port = free_port()
        log = (Path(tmp) / "serve.log").open("wb")
        service = subprocess.Popen(
            [str(Path(PYTHON).with_name("xworkmate")), "serve", "--bind", f"127.0.0.1:{port}",
             "--web-workers", str(args.web_workers), "--workers", "1", "--concurrency", "2"],
            cwd=tmp, env=env, stdout=log, stderr=log, start_new_session=True,
        )
        try:
            try:
                wait_ready(port, token, service, timeout=90)
            except SystemExit as exc:
                raise SystemExit(f"xworkmate serve did not come up ({exc}):\n"
                                 + (Path(tmp) / "serve.log").read_text(errors="replace")) from None
            stop = threading.Event()
            most = [0]
            sampler = threading.Thread(target=_connections, args=(db_url, stop, most), daemon=True)
            sampler.start()
            started = time.perf_counter()
            with ProcessPoolExecutor(args.clients) as pool:
                results = list(pool.map(_client, [(port, token, c, args.seconds)
                                                  for c in range(args.clients)]))
            elapsed = time.perf_counter() - started
            stop.set()
            sampler.join(timeout=5)
        finally:
            os.killpg(service.pid, 15)
            service.wait(timeout=60)
            log.close()
        samples = [s for client in results for s in client]
        # An error count above 0 is a defect to find: the service's own account of it
        # is kept before the run's folder goes (and only then: a clean run leaves none).
        failed = not all(ok for _, _, ok in samples)
        kept = _keep_log(Path(tmp) / "serve.log") if failed else None
    _print(samples, elapsed, args, most[0])
    if kept is None:
        return 0
    print(f"the service's log: {kept}")
    for traceback in _tracebacks(kept.read_text(errors="replace")):
        print(traceback)
    return 1


def _keep_log(log: Path) -> Path:
    """A copy of the service's log that outlives the run's temporary directory."""
    handle, name = tempfile.mkstemp(prefix="xworkmate-load-serve-", suffix=".log")
    os.close(handle)
    shutil.copyfile(log, name)
    return Path(name)


def _tracebacks(text: str) -> list[str]:
    """Each traceback in `text`: from its first line to the exception's line."""
    found: list[str] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Traceback (most recent call last):"):
            end = i + 1
            while end < len(lines) and (lines[end].startswith((" ", "\t")) or not lines[end]):
                end += 1
            found.append("\n".join(lines[max(0, i - 1) : end + 1]))
    return found


def _print(
    samples: list[Sample], elapsed: float, args: argparse.Namespace, connections: int
) -> None:
    refusals = sorted({name for name, _, _ in samples if name.startswith("! ")})
    samples = [s for s in samples if not s[0].startswith("! ")]
    names = sorted({name for name, _, _ in samples})
    print(f"{args.clients} clients, {args.seconds:g} s, xworkmate serve with {args.web_workers} "
          "web workers, 1 Celery worker (2 processes), one beat; own PostgreSQL and Redis")
    print(f"{'call':<18}{'requests':>10}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'errors':>8}")
    for name in names:
        latencies = sorted(lat for n, lat, _ in samples if n == name)
        errors = sum(1 for n, _, ok in samples if n == name and not ok)
        p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
        print(f"{name:<18}{len(latencies):>10}{len(latencies) / elapsed:>9.1f}"
              f"{statistics.median(latencies) * 1000:>9.1f}{p99 * 1000:>9.1f}{errors:>8}")
    total_errors = sum(1 for _, _, ok in samples if not ok)
    print(f"{'all':<18}{len(samples):>10}{len(samples) / elapsed:>9.1f}{'':>18}{total_errors:>8}")
    print(f"most database connections at once: {connections}")
    for refusal in refusals[:5]:
        print(refusal[2:])


if __name__ == "__main__":
    raise SystemExit(main())
