"""The outbox with real processes (issue 10): PostgreSQL, Redis, Celery workers, HTTP.

- a real worker on Redis delivers a committed message to a real HTTP receiver;
- a worker killed with SIGKILL in the middle of a send leaves the row unknown,
  never sent, with its attempt open, and nobody sends it again meanwhile;
- two dispatchers at once on PostgreSQL send each due row exactly once;
- an enqueue inside a transaction that rolls back sends nothing, with a live
  worker and beat running the dispatch job every second.

The receiver runs in the test process; the workers are `celery worker`
processes given a config file that routes `longrun.progress` to it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.db import connection, transaction
from django.utils import timezone

from tests.conftest import configure
from tests.delivery.conftest import use_channels
from tests.integration.conftest import CeleryProcesses, clear_broker, wait_for
from xworkmate.config import DeliveryChannel
from xworkmate.delivery.channels.webhook import verify_signature
from xworkmate.delivery.models import Attempt, Message
from xworkmate.delivery.tasks import deliver, dispatch
from xworkmate.models import PeriodicJobState

SECRET = "integration-s3cret"
PURPOSE = "longrun.progress"


class Receiver:
    """A webhook receiver on 127.0.0.1 that counts requests per idempotency key.

    With `hold` set, it reads each request and then waits (up to a minute) for
    `release` before answering: the request is in flight, as long as the test wants.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_key: Counter[str] = Counter()
        self.bodies: list[tuple[dict[str, str], bytes]] = []
        self.arrived = threading.Event()
        self.hold = False
        self.release = threading.Event()
        self.delay = 0.0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver.lock:
                    receiver.by_key[self.headers.get("Idempotency-Key", "")] += 1
                    receiver.bodies.append((dict(self.headers), body))
                receiver.arrived.set()
                if receiver.hold:
                    receiver.release.wait(timeout=60)
                elif receiver.delay:
                    receiver.release.wait(timeout=receiver.delay)
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                return

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                return  # an answer to a killed worker cannot be written: expected

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def count(self) -> int:
        with self.lock:
            return sum(self.by_key.values())

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver()
    yield running
    running.close()


@pytest.fixture
def routed(real_services: None, receiver: Receiver, settings: Any) -> Iterator[Receiver]:
    """This process routes longrun.progress to the receiver, as the workers' config does."""
    channel = DeliveryChannel(
        name="hook",
        kind="webhook",
        url=receiver.url,
        secret=SECRET,
        read_timeout=timedelta(seconds=60),
    )
    use_channels(settings, channel, routes={PURPOSE: "hook"})
    clear_broker()
    yield receiver
    clear_broker()


def worker_config(receiver: Receiver, extra: str = "") -> str:
    return (
        "[[delivery.channels]]\n"
        'name = "hook"\n'
        'kind = "webhook"\n'
        f'url = "{receiver.url}"\n'
        f'secret = "{SECRET}"\n'
        'read_timeout = "60s"\n'
        "[delivery.routes]\n"
        f'"{PURPOSE}" = "hook"\n'
        f"{extra}"
    )


def enqueue(key: str, *, target: str = "agent:main:main", body: str = "正在看：日志") -> Message:
    from xworkmate.delivery.services import outbox_enqueue

    # Committed here (autocommit): the worker is asked once the row is visible.
    with transaction.atomic():
        return outbox_enqueue(
            purpose=PURPOSE, target=target, body=body, idempotency_key=key, now=timezone.now()
        )


def _descendants(pid: int) -> list[int]:
    found: list[int] = []
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return found
    for tid in threads:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", encoding="ascii") as handle:
                children = [int(c) for c in handle.read().split()]
        except FileNotFoundError:
            continue
        for child in children:
            found += [child, *_descendants(child)]
    return found


def _kill_9(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the worker and its pool processes at once (no cleanup code of theirs runs)."""
    pids = [proc.pid, *_descendants(proc.pid)]
    assert len(pids) >= 2, "the prefork pool's processes were not found"
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    proc.wait(timeout=10)
    for pid in pids[1:]:
        wait_for(_dead(pid), timeout=10, what=f"process {pid} to die")


def _dead(pid: int) -> Callable[[], bool]:
    return lambda: _zombie(pid)


def _zombie(pid: int) -> bool:
    """Gone, or dead and waiting for its parent (the pool's parent was killed too)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as handle:
            return any(line.startswith("State:\tZ") for line in handle)
    except FileNotFoundError:
        return True


def _sent(message: Message) -> Callable[[], Message | None]:
    return lambda: Message.objects.filter(pk=message.pk, status=Message.SENT).first()


def test_it_delivers_a_committed_message_through_a_real_worker_to_a_real_receiver(
    celery_processes: CeleryProcesses, routed: Receiver
) -> None:
    worker = celery_processes.start("worker", worker_config(routed))
    message = enqueue("progress-1")
    sent = wait_for(_sent(message), timeout=60, what="the worker to send the message")
    assert worker.poll() is None, celery_processes.logs()
    assert isinstance(sent, Message) and sent.sent_at is not None and sent.attempt_count == 1
    [attempt] = Attempt.objects.filter(message=message)
    assert (attempt.outcome, attempt.by, attempt.detail) == ("sent", "worker", "HTTP 200")
    assert attempt.finished_at is not None
    assert routed.by_key == {"progress-1": 1}
    [(headers, body)] = routed.bodies
    assert verify_signature(
        secret=SECRET,
        timestamp=headers["X-Xworkmate-Timestamp"],
        body=body,
        signature=headers["X-Xworkmate-Signature"],
    )
    payload = json.loads(body)
    assert (payload["id"], payload["message"], payload["attempt"]) == (message.pk, "正在看：日志", 1)
    assert "Task xworkmate.delivery.deliver" in celery_processes.logs()


def test_it_leaves_the_message_unknown_when_the_worker_is_killed_mid_send(
    celery_processes: CeleryProcesses, routed: Receiver
) -> None:
    routed.hold = True  # the request stays in flight until the test releases it
    worker = celery_processes.start("worker", worker_config(routed))
    message = enqueue("progress-killed")
    assert routed.arrived.wait(timeout=60), celery_processes.logs()
    in_flight = Message.objects.get(pk=message.pk)
    assert in_flight.status == Message.UNKNOWN  # claimed (and committed) before sending
    _kill_9(worker)
    routed.release.set()  # the answer now goes to a dead socket
    after = Message.objects.get(pk=message.pk)
    assert (after.status, after.sent_at, after.attempt_count) == (Message.UNKNOWN, None, 1)
    assert after.next_attempt_at is not None  # only after longrun.unknown_cooldown, and
    assert after.next_attempt_at - after.updated_at == timedelta(minutes=2)  # only on a dedup channel
    [attempt] = Attempt.objects.filter(message=message)
    assert (attempt.finished_at, attempt.outcome, attempt.by) == (None, "", "worker")
    # The task a redelivery would run again, and a dispatcher, both send nothing now.
    assert deliver(message.pk) is False
    assert dispatch() == 0
    assert routed.by_key == {"progress-killed": 1}
    assert Message.objects.get(pk=message.pk).status == Message.UNKNOWN


ROWS = 40


def test_it_sends_each_due_row_once_with_two_dispatchers_at_once(
    routed: Receiver, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    assert connection.vendor == "postgresql"
    monkeypatch.setattr("xworkmate.delivery.services.enqueue._ask_a_worker", lambda message_id: None)
    configure(settings, "delivery", batch_size=3)  # many small batches, so the two interleave
    messages = [enqueue(f"due-{i}", target=f"agent:main:{i}") for i in range(ROWS)]
    # All due now, as after a lost enqueue-on-commit: only the dispatchers send them.
    Message.objects.update(next_attempt_at=timezone.now() - timedelta(seconds=1))
    routed.delay = 0.02  # each send takes a moment, so the two overlap
    barrier = threading.Barrier(2)
    counts: list[int] = [-1, -1]  # -1: that dispatcher raised (its traceback is printed)

    def run(index: int) -> None:
        try:
            barrier.wait(timeout=30)
            counts[index] = dispatch()
        finally:
            connection.close()  # this thread's own connection

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert -1 not in counts, counts
    assert sum(counts) == ROWS, counts
    assert all(c > 0 for c in counts), counts  # both took part
    assert routed.by_key == {f"due-{i}": 1 for i in range(ROWS)}
    assert set(Message.objects.values_list("status", "attempt_count")) == {("sent", 1)}
    assert Attempt.objects.count() == ROWS
    assert {m.pk for m in messages} == set(Attempt.objects.values_list("message_id", flat=True))
    assert set(Attempt.objects.values_list("by", "outcome")) == {("dispatch job", "sent")}


def test_it_sends_nothing_for_an_enqueue_whose_transaction_rolled_back(
    celery_processes: CeleryProcesses, routed: Receiver
) -> None:
    # A live worker, and beat running the dispatch job every second.
    config = worker_config(
        routed, '[[periodic_jobs]]\nname = "delivery-dispatch"\nevery = "1s"\n'
    )
    celery_processes.start("worker", config)
    celery_processes.start("beat", config)
    from xworkmate.delivery.services import outbox_enqueue

    with pytest.raises(RuntimeError), transaction.atomic():
        outbox_enqueue(
            purpose=PURPOSE,
            target="agent:main:main",
            body="never sent",
            idempotency_key="rolled-back",
            now=timezone.now() - timedelta(minutes=5),  # would be overdue for the dispatch job
        )
        raise RuntimeError("the state change failed")
    # A message committed after it goes through the same worker: it is live.
    after = enqueue("committed")
    wait_for(_sent(after), timeout=60, what="the worker to send the committed message")
    ran = PeriodicJobState.objects.filter(name="delivery-dispatch").values_list("runs", flat=True)
    wait_for(lambda: ran.first(), timeout=60, what="the dispatch job to run")
    first = ran.first() or 0
    wait_for(lambda: (ran.first() or 0) >= first + 2, timeout=30, what="two more dispatches")
    assert not Message.objects.filter(idempotency_key="rolled-back").exists()
    assert routed.by_key == {"committed": 1}, celery_processes.logs()
