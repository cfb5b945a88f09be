"""Benchmark of the outbox: enqueue-to-sent through the webhook channel, next to a bare loop.

Usage: python bench/delivery.py [--messages 2000] [--backlog 10000] [--concurrency 1,2]
           [--rounds 3]
           [--database-url postgresql://postgres@127.0.0.1:5432/xworkmate_bench_delivery]
           [--broker-url redis://127.0.0.1:6379/13]

Run by hand, never by the tests (about four minutes with the defaults). The
database named in --database-url is dropped and created afresh; the Celery
queue in the Redis database of --broker-url is purged.

In one run:

- a webhook receiver on 127.0.0.1, in a process of its own (an asyncio
  event loop, HTTP/1.1 keep-alive, TCP_NODELAY, answers 200 at once, counts
  requests; D-K35: it stands in for another machine, so it costs this one
  little);
- PostgreSQL migrated, and a config routing `longrun.progress` to a webhook
  channel at the receiver, with a secret (every request is signed);
- "bare loop": the webhook channel's own `send` (one httpx client, the same
  body, headers and signature) in a loop: no database, no broker;
- for each --concurrency K: `celery worker --pool prefork --concurrency K` on
  Redis and PostgreSQL, warmed up; then
  * streaming: --messages messages enqueued one by one from this process
    (`outbox_enqueue`, one transaction each, so each commit queues a
    `deliver` task) while the workers send; msg/s is messages / (last
    sent_at - first created_at) and p50/p99 is sent_at - created_at, as the
    outbox rows record them;
  * backlog: --backlog messages queued while the workers consume nothing
    (cancel_consumer; the tasks a worker had already taken finish first, and
    the rest of the queue is dropped, so that none of them begins the backlog
    before it is timed, D-K43), then sent with no enqueuer competing for the
    CPUs. 10,000 by default: two workers drain 2,000 in about a second, of
    which the wait for the first send and the last batches finishing one
    worker at a time take 5% or more; at 10,000 about 1% (D-K45);

Each message must reach the receiver exactly once (checked at the end).

Targets (issue 21): one worker at >= 50% of the bare loop's messages/s on a
backlog (the sender measured apart from the enqueuer); two worker processes at
>= 1.6x one on this 2-CPU machine. `--in-flight` and `--batch-size` set
delivery.sends_in_flight and delivery.batch_size (default: the config's, 32 and
100 since D-K41); the first line of the table names them and the load average.

Each row of the table is one phase; the bare loop runs before each phase and
after the last, and the phases are judged against the median of those runs (on
a machine shared with other jobs the loop's rate moved by a third from one
minute to the next). The phases run --rounds times, alternating (1 worker, 2
workers, 1 worker, ...), and each worker row shows the medians of its rounds;
the backlog's rate of every round is printed under the table (D-K47).

Under the table, what one message cost each process while the backlog was
sent (from /proc: the sending loop or the worker's pool processes, its main
process, the PostgreSQL server processes of the workers' connections, the
receiver), the rate that cost allows on this machine's CPUs, and the share of
the machine left idle (D-K38). Five runs (runs 1 and 2 before the gathering
change and the wait on the receiver; the rest as below):

    run   bare loop   1 worker   vs bare   2 workers   vs 1    CPU a message   idle
                                                              1 / 2 workers  1 / 2
    1       2315        1044       45%       1401      1.34x   1.12 / 1.16     - / -
    2       2277        1004       44%       1447      1.44x   1.16 / 1.13   39 / 15%
    3       2264        1059       47%       1446      1.36x   1.13 / 1.16   38 / 13%
    4       2316        1004       43%       1481      1.47x   1.20 / 1.11   39 / 17%
    5       2322        1081       47%       1464      1.36x   1.09 / 1.12   39 / 16%

At two workers' cost a message, a full machine would send 1,724-1,802
messages/s, 1.6 times one worker or more in most runs: what two workers lose
is the 13-17% of the machine that stays idle while both wait.

With D-K40 (a batch steps when its sending thread is about to run out of begun
sends; the table's last column, writing transactions a message, fell from
0.15-0.18 to 0.11), four runs, two with each of two thresholds:

    run   bare loop   1 worker   vs bare   2 workers   vs 1    CPU a message   idle
                                                              1 / 2 workers  1 / 2
    1       2344        1187       51%       1888      1.59x   0.90 / 0.87   46 / 18%
    2       2207        1141       52%       1821      1.60x   1.02 / 0.91   41 / 16%
    3       2332        1197       51%       1864      1.56x   0.91 / 0.89   45 / 17%
    4       2290        1182       52%       1898      1.61x   0.96 / 0.94   42 / 11%

(runs 1 and 3 with the kept threshold of two sends waiting, 2 and 4 with four.)

With D-K41 (32 sends in flight instead of 16; 0.07 writing transactions a
message), seven runs (the first two with --in-flight 32, before it became the
default):

    run   bare loop   1 worker   vs bare   2 workers   vs 1    CPU a message   idle
                                                              1 / 2 workers  1 / 2
    1       2265        1246       55%       2318      1.86x   0.83 / 0.76   47 / 12%
    2       2417        1327       55%       2272      1.71x   0.80 / 0.77   46 / 13%
    3       2345        1202       51%       2245      1.87x   0.87 / 0.77   47 / 13%
    4       2301        1282       56%       2027      1.58x   0.84 / 0.83   47 / 18%
    5       2295        1312       57%       2064      1.57x   0.78 / 0.82   47 / 17%
    6       2390        1338       56%       2052      1.53x   0.78 / 0.82   47 / 18%
    7       2381        1208       51%       2308      1.91x   0.86 / 0.76   48 / 12%

One worker is at half the loop or more in every run; two workers reach 1.6
times one in four runs of seven, and their rate falls in two groups by the
share of the machine left idle (12-13% or 17-18%).

With the backlog of 10,000 (D-K45), seven runs, the loop at 1,301-1,707
msg/s: one worker 52-60% of the loop, two workers 1.55-1.93x one, both
targets in five runs of seven; the CPU a message cost the same code moved by
a fifth from one phase to the next.

Since a claim reads the backlog in order whatever the statistics say (D-K46)
and with three alternating rounds a run (D-K47), five runs, the rows the
rounds' medians:

    run   bare loop   1 worker   vs bare   2 workers   vs 1    CPU a message   idle
                                                              1 / 2 workers  1 / 2
    1       2514        1432       57%       2183      1.52x   0.73 / 0.79   47 / 12%
    2       2167        1232       57%       2057      1.67x   0.84 / 0.84   47 / 12%
    3       2048        1160       57%       2162      1.86x   0.90 / 0.78   47 / 13%
    4       2153        1147       53%       1959      1.71x   0.87 / 0.89   47 / 12%
    5       2228        1182       53%       1994      1.69x   0.88 / 0.86   47 / 13%
    6       2137        1184       55%       1852      1.56x   0.89 / 0.93   46 / 13%
    7       2008        1107       55%       2001      1.81x   0.94 / 0.85   46 / 12%
    8       1887        1043       55%       1817      1.74x   1.00 / 0.97   46 / 11%

Both targets in six runs of eight. On two CPUs shared with the database and
the receiver, two workers at 1.6 times one need one worker to use at most
about half the machine, so the targets leave one worker's rate a window about
a tenth wide (D-K47).

On a slower machine (the loop 1,450-1,720 msg/s), eight runs of the same code:
one worker 48-60% of the loop, two workers 1.49-1.86x one, both targets in
five runs. A batch that claims again while it sends (one worker 60-68%, two
workers 1.42-1.56x one) and stepping with six sends waiting instead of two
(56-61%, 1.49-1.69x) were measured against it and not kept (D-K41).

Measured with D-K36 (2 CPUs, PostgreSQL, Redis, 2,000 messages a row,
sends_in_flight 16, batch_size 100), six runs in one hour on a machine about
four times as fast as D-K35's:

    run   bare loop msg/s   1 worker backlog msg/s   vs bare   2 workers   vs 1
    1          2089                 1101                53%      1506      1.37x
    2          2354                 1082                46%      1559      1.44x
    3          2504                 1019                41%      1483      1.46x
    4          2233                  879                39%      1479      1.68x
    5          2368                  894                38%      1484      1.66x
    6          2456                 1095                45%      1416      1.29x

Each target is met in some run, never both in one: two workers send about as
much in every run (the CPUs are full), so the ratio is high exactly when one
worker was slow.

The same hour with D-K35's code (two sending threads): one worker 767, 931 and
1,082 msg/s (34-46%), two workers 1.56-1.84x one. What one message costs the
CPUs (process CPU time, measured in one process): the worker 0.74-0.82 ms,
PostgreSQL 0.19-0.24 ms, the receiver 0.10 ms; two workers on 2 CPUs can then
send at most ~1,800 msg/s, less than 1.6x a worker at half the loop (D-K36).
With D-K35 on a slow machine (its bare loop 449-573 msg/s): one worker 47-57%,
two workers 1.17-1.41x one. With D-K34 on a machine twice as fast as that (its
bare loop 1,034-1,263 msg/s, the threaded receiver): one worker 42-47%, two
workers 1.34-1.73x one.

Where one worker's CPU goes, a message (measured in one process, thread CPU
time of each part):

    part                          before D-K34     D-K34         D-K36
    the send (httpx, JSON, HMAC)    0.8-0.9 ms    0.6-0.65 ms   0.48-0.55 ms
    its share of the steps          0.6 ms        0.15-0.2 ms   0.14-0.17 ms
    its share of the claim          0.05 ms       0.04-0.05 ms  0.03 ms (D-K37)
    in all                          1.7 ms        0.9-1.0 ms    0.74-0.82 ms
    the bare loop's send                          0.45 ms       0.40-0.49 ms

(D-K34 and D-K36 on machines of about the same speed.)

On the slower machine of D-K35 the same parts cost about 2.5 times as much
(the bare loop's send 1.2-1.4 ms); a step took ~13 ms of wall time for ~3.3
ms of CPU, waiting on its round trips and for the interpreter's lock after
each, which is why it now makes two exchanges instead of seven.

1. (Fixed, issue 10.) Every `deliver` task opened a new PostgreSQL connection
   unless CELERY_DB_REUSE_MAX is set: xworkmate/settings.py sets it and
   xworkmate/celery.py recycles connections per task with close_old_connections.
2. Exact records cost transactions (D-K30): a message turns unknown only in the
   step that commits just before its own send, and each answer is written as
   it arrives, so a batch runs a step every few answers. Through the ORM a step
   cost ~4 ms of CPU whatever it carried; by hand (D-K34) ~1.3 ms; on
   PostgreSQL it is now two exchanges with the server (D-K35) whose texts
   psycopg parses once (D-K36), ~1 ms.
3. The worker's child is one process on one core: the sends hold the
   interpreter's lock for most of their 0.45 ms, so threads take turns and
   each turn costs switching and delays the steps; one thread (D-K36) drains
   more than two (D-K35), two more than four (D-K34), and four more than 16.
   What remains above the bare loop's cost is the steps' and the claims' share,
   and the moments the one thread waits for a step to begin more sends.
4. Streaming is bounded by the enqueuer: one process enqueuing one message per
   transaction manages ~250-450 messages/s here, and the workers keep pace
   (enqueue-to-sent p50 35-45 ms); more workers only take CPU from it.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from multiprocessing.sharedctypes import Synchronized
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._common import free_port, recreate_database  # noqa: E402 (needs ROOT on the path)

PYTHON = sys.executable
PURPOSE = "longrun.progress"
BODY = "正在看：日志 — the progress of a long task, about a line of text."
SECRET = "bench-secret"  # noqa: S105 (signs the bench's requests to its own receiver)


def _receive(port: int, count: Synchronized[int]) -> None:
    """The receiver process: answers every POST with 200 at once, over kept-alive connections.

    It stands in for a service on another machine, so it is written to cost this
    machine as little as it can: one thread, an event loop, and only as much HTTP
    as the channel's requests need (a request line, headers, a Content-Length
    body). With the standard library's threaded http.server it took ~0.4 ms of CPU
    a request, a quarter of what the workers it is measured against had (D-K35).
    """
    import asyncio

    class Receiver(asyncio.Protocol):
        def __init__(self) -> None:
            self.buffer = b""
            self.transport: asyncio.Transport | None = None

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            assert isinstance(transport, asyncio.Transport)
            self.transport = transport  # asyncio sets TCP_NODELAY on TCP connections

        def data_received(self, data: bytes) -> None:
            self.buffer += data
            while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
                length = 0
                for line in self.buffer[:end].split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                if len(self.buffer) < end + 4 + length:
                    return  # the rest of the body is still on its way
                self.buffer = self.buffer[end + 4 + length :]
                with count.get_lock():
                    count.value += 1
                assert self.transport is not None
                self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")

    loop = asyncio.new_event_loop()
    # A worker opens up to delivery.sends_in_flight connections at once.
    loop.run_until_complete(loop.create_server(Receiver, "127.0.0.1", port, backlog=128))
    loop.run_forever()


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _cpu_seconds(pid: int) -> float:
    """User and system CPU time a process has used (Linux /proc; 0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICKS


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for path in Path(f"/proc/{pid}/task").glob("*/children"):
        found += [int(child) for child in path.read_text(encoding="ascii").split()]
    return found


def _database_backends() -> list[int]:
    """The PostgreSQL server processes of the bench database's other connections
    (the workers'), when the server runs on this machine."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        )
        return [pid for (pid,) in cursor.fetchall() if Path(f"/proc/{pid}").exists()]


def _machine_idle() -> tuple[int, int]:
    """Ticks the machine's CPUs have been idle (or waiting on the disk), and in all."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            ticks = [int(value) for value in stat.readline().split()[1:]]
    except FileNotFoundError:
        return 0, 0
    return ticks[3] + ticks[4], sum(ticks)


def _next_transaction_id() -> int:
    """The id PostgreSQL gives the next transaction that writes: the count of writing
    transactions so far, in the whole cluster (reading it assigns none)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint")
        return int(cursor.fetchone()[0])


@dataclass(frozen=True)
class _Reading:
    """CPU seconds so far of each process taking part, by part and process id, the
    machine's idle and total ticks, and the cluster's writing transactions so far."""

    processes: dict[str, dict[int, float]]
    idle: int
    total: int
    transactions: int


def _read_cpu(worker: int, receiver: int) -> _Reading:
    idle, total = _machine_idle()
    processes = {
        "pool": {pid: _cpu_seconds(pid) for pid in _children(worker)},
        "main": {worker: _cpu_seconds(worker)},
        "postgres": {pid: _cpu_seconds(pid) for pid in _database_backends()},
        "receiver": {receiver: _cpu_seconds(receiver)},
    }
    return _Reading(processes, idle, total, _next_transaction_id())


def _cpu_per_message(before: _Reading, after: _Reading, messages: int) -> dict[str, float]:
    """Milliseconds of CPU a message cost each part between two readings (a process
    that started in between counts from zero; one that ended is not counted), and
    the share of the machine's CPU time that was idle (under "idle")."""
    total = after.total - before.total
    per_part = {
        part: sum(cpu - before.processes[part].get(pid, 0.0) for pid, cpu in now.items())
        * 1000
        / messages
        for part, now in after.processes.items()
    }
    return {
        "idle": (after.idle - before.idle) / total if total else math.nan,
        "commits": (after.transactions - before.transactions) / messages,
        **per_part,
    }


def _bare_loop(messages: int, receiver: int) -> dict[str, float]:
    """The channel's send, in a loop: the same requests and client, nothing else."""
    from xworkmate.delivery.channels.base import Envelope, Outcome
    from xworkmate.delivery.channels.registry import build_channel
    from xworkmate.delivery.policies import body_hash
    from xworkmate.delivery.services import channel_config

    channel = build_channel(channel_config("bench"))
    created = datetime.now(UTC)

    def envelope(i: int) -> Envelope:
        return Envelope(
            message_id=i,
            purpose=PURPOSE,
            target=f"agent:main:bare-{i}",
            body=BODY,
            body_hash=body_hash(BODY),
            idempotency_key=f"bare-{i}",
            attempt=1,
            created_at=created,
        )

    for i in range(20):  # warm-up: the connection, the first request
        channel.send(envelope(-1 - i))
    latencies: list[float] = []
    errors = 0
    received_before, cpu_before = _cpu_seconds(receiver), time.process_time()
    started = time.perf_counter()
    for i in range(messages):
        one = envelope(i)
        before = time.perf_counter()
        if channel.send(one).outcome is not Outcome.SENT:
            errors += 1
        latencies.append(time.perf_counter() - before)
    elapsed = time.perf_counter() - started
    return {
        "cpu_pool": (time.process_time() - cpu_before) * 1000 / messages,  # the sending loop
        "cpu_receiver": (_cpu_seconds(receiver) - received_before) * 1000 / messages,
        "rate": messages / elapsed,
        "p50": statistics.median(latencies) * 1000,
        "p99": _percentile(latencies, 0.99) * 1000,
        "enqueue_rate": float("nan"),
        "drain_rate": messages / elapsed,
        "errors": errors,
    }


def _enqueue(prefix: str, count: int) -> float:
    """Enqueue `count` messages, one transaction each; the enqueue rate (messages/s)."""
    from django.db import transaction
    from django.utils import timezone

    from xworkmate.delivery.services import outbox_enqueue

    started = time.perf_counter()
    for i in range(count):
        with transaction.atomic():
            outbox_enqueue(
                purpose=PURPOSE,
                target=f"agent:main:{prefix}-{i}",
                body=BODY,
                idempotency_key=f"{prefix}-{i}",
                now=timezone.now(),
            )
    return count / (time.perf_counter() - started)


def _wait_sent(
    prefix: str, count: int, *, timeout: float, arrived: Callable[[], bool] | None = None
) -> None:
    """Until all `count` messages of `prefix` are recorded sent. With `arrived`, first
    until it is true (the receiver counted them): asking the database every moment
    would take CPU from the workers being measured (a count over the outbox each time)."""
    from django.db.models import Count

    from xworkmate.delivery.models import Message

    deadline = time.monotonic() + timeout
    while arrived is not None and not arrived() and time.monotonic() < deadline:
        time.sleep(0.01)
    rows = Message.objects.filter(idempotency_key__startswith=f"{prefix}-")
    while time.monotonic() < deadline:
        if rows.filter(status=Message.SENT).count() >= count:
            return
        time.sleep(0.05)
    by_status = dict(rows.values_list("status").annotate(n=Count("id")))
    raise SystemExit(f"{prefix}: not all {count} messages sent within {timeout:g} s: {by_status}")


def _start_worker(
    concurrency: int, env: dict[str, str], log_dir: Path, tag: str
) -> tuple[subprocess.Popen[bytes], str]:
    hostname = f"bench-{tag}-{os.getpid()}@{socket.gethostname()}"
    with (log_dir / f"worker-{tag}.log").open("wb") as log:
        worker = subprocess.Popen(
            [
                PYTHON,
                "-m",
                "celery",
                "-A",
                "xworkmate.celery",
                "worker",
                "--pool",
                "prefork",
                "--concurrency",
                str(concurrency),
                "--hostname",
                hostname,
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "--loglevel",
                "WARNING",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=log,
        )
    return worker, hostname


def _wait_idle(control: Any, hostname: str, timeout: float = 60.0) -> None:
    """Until the worker has no task running and none taken in advance."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        inspect = control.inspect(destination=[hostname], timeout=2)
        active, reserved = inspect.active() or {}, inspect.reserved() or {}
        if hostname in active and not active[hostname] and not reserved.get(hostname):
            return
        time.sleep(0.2)
    raise SystemExit(f"{hostname}: still running tasks {timeout:g} s after it stopped taking any")


def _sent_rows(prefix: str) -> list[tuple[datetime, datetime, int]]:
    from xworkmate.delivery.models import Message

    rows = Message.objects.filter(idempotency_key__startswith=f"{prefix}-").values_list(
        "created_at", "sent_at", "attempt_count"
    )
    # All are sent (_wait_sent waited for it), so each has its sent_at.
    return [(created, sent, attempts) for created, sent, attempts in rows if sent is not None]


def _worker_phase(
    concurrency: int,
    tag: str,
    messages: int,
    backlog_size: int,
    env: dict[str, str],
    log_dir: Path,
    receiver: int,
    received: Synchronized[int],
) -> dict[str, float]:
    """Streaming (enqueue while the workers send), then draining a queued backlog."""
    import xworkmate.celery

    control = xworkmate.celery.app.control
    control.purge()
    worker, hostname = _start_worker(concurrency, env, log_dir, tag)
    try:
        # Warm-up: every pool process imports the code and opens its connections.
        _enqueue(f"warm{tag}", 10 * concurrency)
        _wait_sent(f"warm{tag}", 10 * concurrency, timeout=120)
        stream = f"stream{tag}"
        enqueue_rate = _enqueue(stream, messages)
        _wait_sent(stream, messages, timeout=600)
        # The backlog: queued while the workers take nothing, then sent with no
        # enqueuer competing for the CPUs. Each streamed message queued a task, and
        # most of them find nothing to send (an earlier batch sent theirs): the
        # worker stops taking tasks, finishes those it had already taken, and the
        # rest are dropped, else one of them would begin sending the backlog while
        # it is still being queued, before the drain is timed.
        control.cancel_consumer("celery", destination=[hostname], reply=True, timeout=10)
        _wait_idle(control, hostname)
        control.purge()
        backlog = f"backlog{tag}"
        expected = received.value + backlog_size
        _enqueue(backlog, backlog_size)
        before = _read_cpu(worker.pid, receiver)
        resumed = datetime.now(UTC)
        control.add_consumer("celery", destination=[hostname], reply=True, timeout=10)
        _wait_sent(backlog, backlog_size, timeout=600, arrived=lambda: received.value >= expected)
        cpu = _cpu_per_message(before, _read_cpu(worker.pid, receiver), backlog_size)
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=60)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
    rows = _sent_rows(stream)
    first = min(created for created, _, _ in rows)
    last = max(sent for _, sent, _ in rows)
    latencies = [(sent - created).total_seconds() for created, sent, _ in rows]
    drained = _sent_rows(backlog)
    drain_seconds = (max(sent for _, sent, _ in drained) - resumed).total_seconds()
    return {
        "rate": len(rows) / (last - first).total_seconds(),
        "p50": statistics.median(latencies) * 1000,
        "p99": _percentile(latencies, 0.99) * 1000,
        "enqueue_rate": enqueue_rate,
        "drain_rate": len(drained) / drain_seconds,
        "drain_seconds": drain_seconds,
        "errors": sum(1 for _, _, attempts in rows + drained if attempts != 1),
        **{f"cpu_{part}": ms for part, ms in cpu.items()},
    }


def _workers(concurrency: int) -> str:
    """How a row names its phase: "1 worker", "2 workers"."""
    return f"{concurrency} worker{'s' if concurrency > 1 else ''}"


def _median_row(runs: list[dict[str, float]]) -> dict[str, float]:
    """Each figure's median over the rounds (D-K47); the errors are summed."""
    row = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
    row["errors"] = sum(run["errors"] for run in runs)
    return row


def _print_cpu(rows: list[tuple[str, dict[str, float]]]) -> None:
    """Where the CPUs went, a message, and what they could send at that cost: the
    ceiling that all the processes together put on the rate (D-K38)."""
    cpus = os.cpu_count() or 1
    print(
        f"\n{'CPU a message, ms':<28} {'sending':>8} {'worker':>7} {'postgres':>9} "
        f"{'receiver':>9} {'all':>6} {f'msg/s on {cpus} CPUs':>16} {'idle':>5} {'commits':>8}"
    )
    for name, row in rows:
        parts = [row.get(f"cpu_{part}", math.nan) for part in ("pool", "main", "postgres")]
        parts.append(row["cpu_receiver"])
        total = sum(part for part in parts if not math.isnan(part))
        shown = ["-" if math.isnan(part) else f"{part:.3f}" for part in parts]
        print(
            f"{name:<28} {shown[0]:>8} {shown[1]:>7} {shown[2]:>9} {shown[3]:>9} "
            f"{total:>6.3f} {cpus * 1000 / total:>16,.0f} "
            f"{'-' if 'cpu_idle' not in row else format(row['cpu_idle'], '.0%'):>5} "
            f"{'-' if 'cpu_commits' not in row else format(row['cpu_commits'], '.2f'):>8}"
        )
    print(
        "sending: the bare loop's process, or the worker's pool processes, while the backlog"
        " was sent; worker: its main process; postgres: the server processes of the"
        " workers' connections; msg/s: the rate at which that much CPU a message fills"
        " every CPU (a ceiling; the bare loop sends one at a time, so it stays far below);"
        " idle: the share of the machine's CPU time nobody used while the backlog was sent;"
        " commits: the transactions that wrote, a message (claims and steps, D-K40)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--messages", type=int, default=2000, help="bare loop and streaming messages per row"
    )
    parser.add_argument(
        "--backlog",
        type=int,
        default=10_000,
        help="messages queued before the drain (D-K45: a drain of several seconds)",
    )
    parser.add_argument("--concurrency", default="1,2", help="worker processes per phase")
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="times each phase runs, alternating with the others; medians are shown (D-K47)",
    )
    parser.add_argument(
        "--database-url", default="postgresql://postgres@127.0.0.1:5432/xworkmate_bench_delivery"
    )
    parser.add_argument("--broker-url", default="redis://127.0.0.1:6379/13")
    parser.add_argument(
        "--in-flight",
        type=int,
        default=None,
        help="delivery.sends_in_flight (sends a batch keeps begun; default: the config's)",
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help="delivery.batch_size (messages a batch claims; default: the config's)",
    )
    args = parser.parse_args()
    phases = [int(k) for k in args.concurrency.split(",")]

    recreate_database(args.database_url)
    port = free_port()
    received: Synchronized[int] = multiprocessing.Value("q", 0)
    receiver = multiprocessing.Process(target=_receive, args=(port, received), daemon=True)
    receiver.start()

    tmp = Path(tempfile.mkdtemp(prefix="xworkmate-bench-delivery-"))
    config = tmp / "xworkmate.toml"
    delivery = "".join(
        f"{key} = {value}\n"
        for key, value in (("sends_in_flight", args.in_flight), ("batch_size", args.batch_size))
        if value is not None
    )
    config.write_text(
        '[service]\nlanguage_code = "en"\n'
        f"[delivery]\n{delivery}"
        "[[delivery.channels]]\n"
        'name = "bench"\nkind = "webhook"\n'
        f'url = "http://127.0.0.1:{port}/hook"\nsecret = "{SECRET}"\n'
        "[delivery.routes]\n"
        f'"{PURPOSE}" = "bench"\n',
        encoding="utf-8",
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "xworkmate.settings",
        "XWORKMATE_HOME": str(tmp / "home"),
        "XWORKMATE_CONFIG": str(config),
        "DATABASE_URL": args.database_url,
        "CELERY_BROKER_URL": args.broker_url,
    }
    subprocess.run(
        [PYTHON, "manage.py", "migrate", "--noinput"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    os.environ.update(env)
    import django

    django.setup()
    # The settings log to the console and a file; the workers' console is their log
    # file, this process's is the terminal that shows the table: only the file stays.
    import logging

    root = logging.getLogger()
    for handler in list(root.handlers):
        if type(handler) is logging.StreamHandler:
            root.removeHandler(handler)
    # The workers run at --loglevel WARNING, so their sends log nothing: nor does the
    # bare loop's (httpx logs each request at INFO, which cost it a file write each).
    logging.getLogger("httpx").setLevel(logging.WARNING)

    rows: list[tuple[str, dict[str, float]]] = []
    # Each phase's figures, round by round.
    runs: dict[int, list[dict[str, float]]] = {k: [] for k in phases}
    try:
        # The bare loop runs before each phase and after the last: on a machine shared
        # with other jobs its rate moves by a third from one minute to the next, so the
        # worker phases are judged against the median of the loops around them. The
        # phases alternate, round after round, and each row shows its medians: the
        # same code's CPU a message moved by a fifth between phases minutes apart, so
        # one drain of each says as much about the minute as about the code (D-K47).
        receiver_pid = receiver.pid or 0
        bare_runs = [_bare_loop(args.messages, receiver_pid)]
        for round_number in range(args.rounds):
            for concurrency in phases:
                runs[concurrency].append(
                    _worker_phase(
                        concurrency,
                        f"{concurrency}r{round_number}",
                        args.messages,
                        args.backlog,
                        env,
                        tmp,
                        receiver_pid,
                        received,
                    )
                )
                bare_runs.append(_bare_loop(args.messages, receiver_pid))
        for concurrency in phases:
            label = f"outbox, {_workers(concurrency)}"
            rows.append((label, _median_row(runs[concurrency])))
        bare_rates = sorted(run["rate"] for run in bare_runs)
        median = statistics.median(bare_rates)
        closest = min(bare_runs, key=lambda run: abs(run["rate"] - median))
        bare = {
            **closest,
            "rate": median,
            "drain_rate": median,
            "errors": sum(run["errors"] for run in bare_runs),
        }
        rows.insert(0, ("bare loop (channel.send)", bare))
    finally:
        receiver.terminate()
        receiver.join(timeout=10)

    from django.conf import settings

    from xworkmate.config.kernel import DELIVERY
    from xworkmate.delivery.models import Message

    conf = DELIVERY.of(settings.XWORKMATE)
    expected = len(bare_runs) * (args.messages + 20) + args.rounds * sum(
        10 * k + args.messages + args.backlog for k in phases
    )
    print(
        f"webhook to a local receiver, {args.messages} messages per row and a backlog of "
        f"{args.backlog}, {args.rounds} rounds, PostgreSQL + Redis, "
        f"{os.cpu_count()} CPUs, sends_in_flight {conf.sends_in_flight}, batch_size "
        f"{conf.batch_size}, load average {os.getloadavg()[0]:.2f}; receiver got "
        f"{received.value} requests (expected {expected}), "
        f"{Message.objects.count()} outbox rows"
    )
    print(
        f"{'row':<28} {'msg/s':>7} {'p50 ms':>8} {'p99 ms':>8} {'vs bare':>8} "
        f"{'enqueue/s':>10} {'backlog msg/s':>14} {'drain s':>8} {'errors':>7}"
    )
    base = rows[0][1]["rate"]
    for name, row in rows:
        rate = row["enqueue_rate"]
        enqueue = "-" if math.isnan(rate) else f"{rate:.0f}"
        drain = f"{row['drain_seconds']:.1f}" if "drain_seconds" in row else "-"
        print(
            f"{name:<28} {row['rate']:>7.0f} {row['p50']:>8.1f} {row['p99']:>8.1f} "
            f"{row['rate'] / base:>7.0%} {enqueue:>10} {row['drain_rate']:>14.0f} "
            f"{drain:>8} {row['errors']:>7.0f}"
        )
    print(
        f"bare loop: the median of {len(bare_rates)} runs, before each phase and after the "
        "last: " + ", ".join(f"{rate:.0f}" for rate in bare_rates) + " msg/s"
    )
    print(
        "msg/s, p50, p99: enqueued one by one while the workers send (enqueue-to-sent);"
        " backlog: --backlog messages queued first, then sent with no enqueuer running;"
        f" each worker row: the medians of {args.rounds} rounds"
    )
    for concurrency in phases:
        print(
            f"backlog msg/s, {_workers(concurrency)}, round by "
            "round: " + ", ".join(f"{run['drain_rate']:.0f}" for run in runs[concurrency])
        )
    _print_cpu(rows)
    by_workers = {k: row for k, (_, row) in zip(phases, rows[1:], strict=True)}
    if 1 in by_workers:
        one = by_workers[1]
        ratio, drained = one["rate"] / base, one["drain_rate"] / base
        verdict = "met" if drained >= 0.5 else "NOT met"
        print(
            f"target: 1 worker >= 50% of the bare loop (backlog): {verdict} "
            f"({drained:.0%}; streaming {ratio:.0%}, capped by the one enqueuer)"
        )
        # Issue 21: two workers at 1.6x one on a 2-CPU machine (the backlog, where the
        # sender is measured apart from the enqueuer); four at 2x where CPUs allow.
        for k, target in ((2, 1.6), (4, 2.0)):
            if k not in by_workers:
                continue
            many = by_workers[k]
            scale, drain_scale = many["rate"] / one["rate"], many["drain_rate"] / one["drain_rate"]
            verdict = "met" if drain_scale >= target else "NOT met"
            print(
                f"target: {k} workers >= {target}x 1 worker (backlog): {verdict} "
                f"({drain_scale:.2f}x; streaming {scale:.2f}x)"
            )
    ok = True
    if received.value != expected or any(row["errors"] for _, row in rows):
        print("ERROR: a message was sent more or less than once")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
