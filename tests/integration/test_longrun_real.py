"""Long-run mode's monitors with real processes: PostgreSQL, Redis, Celery worker and beat, HTTP.

- beat runs the foreground monitor in a real worker, which queues a due task's
  heartbeat; the worker delivers it to a real webhook receiver and the task
  records it as sent (the original's acceptance: progress really reaches the
  session, it is not only a payload);
- two watchdog runs at once on PostgreSQL queue each overdue task's recovery
  message once, and it reaches the receiver once;
- a keepalive run that finds its resume already queued while a worker records
  that resume's outcome: neither waits for the other (D-K44).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.utils import timezone

from longrun import services
from longrun.models import LongTask, TaskEvent
from longrun.monitors import keepalive
from tests.conftest import configure
from tests.delivery.conftest import Receiver, use_channels
from tests.integration.conftest import CeleryProcesses, clear_broker, wait_for
from tests.longrun.conftest import K, task_set
from xworkmate.config import DeliveryChannel
from xworkmate.delivery.models import Message
from xworkmate.delivery.services import outbox_enqueue
from xworkmate.delivery.tasks import dispatch
from xworkmate.models import PeriodicJobState

pytestmark = pytest.mark.integration


@pytest.fixture
def receiver(real_services: None) -> Iterator[Receiver]:
    clear_broker()
    running = Receiver()
    yield running
    running.close()
    clear_broker()


def test_beat_runs_the_heartbeat_and_a_real_worker_delivers_it_and_records_it_sent(
    celery_processes: CeleryProcesses, receiver: Receiver
) -> None:
    # Owes progress (3m) and is not yet stale (10m): the foreground monitor's task.
    task_set(now=timezone.now() - timedelta(minutes=4))
    config = (
        "[[delivery.channels]]\n"
        'name = "hook"\nkind = "webhook"\n'
        f'url = "{receiver.url}"\n'
        "[delivery.routes]\n"
        '"longrun.progress" = "hook"\n'
        # Only the monitor under test, and often, so the test does not wait a minute.
        '[[periodic_jobs]]\nname = "longrun-foreground"\nevery = "1s"\n'
        '[[periodic_jobs]]\nname = "longrun-keepalive"\nenabled = false\n'
        '[[periodic_jobs]]\nname = "longrun-watchdog"\nenabled = false\n'
        '[[periodic_jobs]]\nname = "longrun-cleanup"\nenabled = false\n'
    )
    worker = celery_processes.start("worker", config)
    celery_processes.start("beat", config)
    task = wait_for(
        lambda: LongTask.objects.filter(name="A", last_progress_delivery_status="sent").first(),
        timeout=90,
        what="the heartbeat to be delivered and recorded",
    )
    assert worker.poll() is None, celery_processes.logs()
    assert isinstance(task, LongTask)
    [request] = receiver.requests
    body = request["json"]
    assert (body["purpose"], body["sessionKey"]) == ("longrun.progress", K)
    assert body["message"].startswith("长任务进度提醒：A\n当前状态：executing\n")
    message = Message.objects.get()
    assert (message.status, message.id) == ("sent", body["id"])
    # Sent means the channel confirmed it (D-B10), recorded as the original's fields.
    sent_at = task.last_progress_sent_at
    assert sent_at is not None and sent_at == task.last_progress_at
    assert message.sent_at is not None and abs(sent_at - message.sent_at) < timedelta(seconds=2)
    assert task.heartbeat_message_id is None
    queued = TaskEvent.objects.get(kind="queued")
    assert (queued.by, queued.message_id) == ("heartbeat", message.id)
    assert task.last_progress_message_hash == queued.message_hash
    assert list(TaskEvent.objects.filter(kind="sent").values_list("by", flat=True)) == ["delivery"]
    # Later ticks find nothing due (the next heartbeat is 3 minutes away): one request.
    runs = PeriodicJobState.objects.filter(name="longrun-foreground").values_list("runs", flat=True)
    first = runs.first() or 0
    wait_for(lambda: (runs.first() or 0) >= first + 3, timeout=60, what="three more ticks")
    assert len(receiver.requests) == 1 and Message.objects.count() == 1
    assert "Task longrun.foreground_due" in celery_processes.logs()


TASKS = 30


def test_two_watchdog_runs_at_once_queue_each_recovery_message_once(
    receiver: Receiver, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert connection.vendor == "postgresql"
    channel = DeliveryChannel(name="hook", kind="webhook", url=receiver.url)
    use_channels(settings, channel, routes={"longrun.recovery": "hook"})
    # No worker here: the dispatch below sends what the two runs queued.
    monkeypatch.setattr("xworkmate.delivery.services.enqueue._ask_a_worker", lambda message_id: None)
    stale = timezone.now() - timedelta(minutes=11)
    for i in range(TASKS):
        task_set(f"T{i}", state="analyzing", key=f"agent:main:telegram:dm:{i}", next_check="等CI",
                 now=stale)  # fmt: skip
    def slow_enqueue(**kwargs: Any) -> Any:
        time.sleep(0.01)  # each claim lasts a moment, so the two runs overlap
        return outbox_enqueue(**kwargs)

    monkeypatch.setattr("longrun.monitors._common.outbox_enqueue", slow_enqueue)
    monkeypatch.setattr("longrun.monitors.watchdog.outbox_enqueue", slow_enqueue)
    now = timezone.now()
    barrier = threading.Barrier(2)
    bodies: list[Any] = [None, None]

    def run(index: int) -> None:
        try:
            barrier.wait(timeout=30)
            bodies[index] = services.watchdog_run_once(now=now, by=f"watchdog-{index}").body
        finally:
            connection.close()  # this thread's own connection

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert None not in bodies, "a watchdog run raised (its traceback is printed above)"
    statuses = [p["status"] for body in bodies for p in body["payloads"]]
    assert statuses.count("queued") == TASKS
    assert set(statuses) <= {"queued", "already_queued"}
    assert all(body.get("errors") is None for body in bodies)
    queued_by = [p["task"] for body in bodies for p in body["payloads"] if p["status"] == "queued"]
    assert sorted(queued_by) == sorted(f"T{i}" for i in range(TASKS))
    # Both took part: SKIP LOCKED shared the tasks between them.
    assert all(any(p["status"] == "queued" for p in body["payloads"]) for body in bodies)
    assert Message.objects.filter(purpose="longrun.recovery").count() == TASKS
    assert TaskEvent.objects.filter(kind="queued").count() == TASKS
    # And each message reaches the session once.
    Message.objects.update(next_attempt_at=timezone.now() - timedelta(seconds=1))
    assert dispatch() == TASKS
    # Each one sent, or what its send ran into.
    unsent = dict(Message.objects.exclude(status=Message.SENT).values_list("pk", "last_error"))
    assert unsent == {}
    keys = [request["json"]["idempotencyKey"] for request in receiver.requests]
    assert len(keys) == len(set(keys)) == TASKS
    targets = {request["json"]["sessionKey"] for request in receiver.requests}
    assert targets == {f"agent:main:telegram:dm:{i}" for i in range(TASKS)}
    assert all(
        request["json"]["message"].startswith("长任务回收：你之前处于 analyzing")
        for request in receiver.requests
    )


def test_a_keepalive_finding_its_resume_queued_never_waits_for_the_worker_recording_it(
    real_services: None, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """D-K44: the deadlock the fault suite met after a kill -9, built here step by step.

    A worker recording a message's outcome holds the message's row (it has
    updated it) and then locks the message's task for its outcome handler. A
    keepalive run holds that task and enqueues the same resume again (the run
    before it queued it and died, or an earlier tick did). Had the enqueue's
    INSERT checked the unique key, it would wait for the worker, which waits
    for it: PostgreSQL aborts one of them as a deadlock.
    """
    configure(settings, "longrun", auto_resume=True)
    monkeypatch.setattr("xworkmate.delivery.services.enqueue._ask_a_worker", lambda message_id: None)
    idle_since = timezone.now() - timedelta(hours=1)
    task_set("A", key="agent:main:telegram:dm:1", now=idle_since)
    first = services.keepalive_run_once(now=timezone.now()).body["dispatches"][0]
    assert first["status"] == "queued"
    message_id, task_id = first["message_id"], LongTask.objects.get().pk

    task_held = threading.Event()
    message_held = threading.Event()
    worker_error: list[BaseException] = []

    def worker_records_the_outcome() -> None:
        try:
            with transaction.atomic():
                # What a step does to the message it records (updated, so locked) ...
                Message.objects.filter(pk=message_id).update(updated_at=timezone.now())
                message_held.set()
                task_held.wait(timeout=30)
                # ... then what the resume's outcome handler does first.
                LongTask.objects.select_for_update().get(pk=task_id)
        except BaseException as exc:  # noqa: BLE001 (reported by the assertion below)
            worker_error.append(exc)
        finally:
            connection.close()  # this thread's own connection

    def enqueue_once_the_worker_waits(**kwargs: Any) -> Any:
        task_held.set()  # the run holds the task now: the worker's lock on it waits
        time.sleep(0.3)
        return outbox_enqueue(**kwargs)

    monkeypatch.setattr(keepalive, "outbox_enqueue", enqueue_once_the_worker_waits)
    worker = threading.Thread(target=worker_records_the_outcome)
    worker.start()
    assert message_held.wait(timeout=30)
    body = services.keepalive_run_once(now=timezone.now()).body
    worker.join(timeout=60)
    assert not worker.is_alive()
    assert worker_error == []
    assert body.get("errors") is None, body.get("errors")
    again = body["dispatches"][0]
    assert (again["status"], again["message_id"]) == ("already_queued", message_id)
    assert Message.objects.count() == 1
