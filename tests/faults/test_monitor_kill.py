"""Issue 21: kill -9 the worker while the keepalive and the watchdog work through 300 tasks.

300 long tasks are each due for both monitors: executing and idle for an hour (the
keepalive queues their resume, `longrun.auto_resume` on), and past their checkpoint
(the watchdog queues their recovery message). A real Celery worker (prefork, two
children) and beat run both monitors every two seconds on the suite's own PostgreSQL
and Redis, and deliver what they queue through the outbox to a webhook receiver.
Once the monitors are under way the worker is killed with SIGKILL: the whole worker
(then it is started again), or only its pool children. Each task is claimed in a
transaction of its own that also enqueues its message and writes its log (D-K17),
so a kill between the claim and the commit rolls back all of it and a later tick
does the task again. After recovery: every task got exactly one resume and one
recovery message, each delivered; the task log has one `queued` event per message
and one outcome, and the resume counted once; a message reached the receiver twice
only if its send had begun before the kill, both times with the same
Idempotency-Key.
"""

from __future__ import annotations

import ast
import re
import time
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from longrun._rows import RECOVERY_PURPOSE, RESUME_PURPOSE, _task_id_of
from longrun.models import LongTask, TaskEvent
from longrun.policies.timing import whole_second
from tests.faults.kill import KILLS, kill_9, outbox_snapshot
from tests.faults.receiver import Receiver
from tests.integration.conftest import CeleryProcesses, clear_broker, wait_for
from tests.longrun.conftest import task_set
from xworkmate.delivery.models import Attempt, Message
from xworkmate.models import PeriodicJobState

TASKS = 300
PURPOSES = (RESUME_PURPOSE, RECOVERY_PURPOSE)
MONITORS = ("longrun-keepalive", "longrun-watchdog")


def _config(receiver: Receiver) -> str:
    return f"""
[delivery]
dispatch_grace = "2s"

[longrun]
auto_resume = true
# One recovery message per task and stale window, the window counted from the epoch
# (D-B20): a window of a year, so the test never straddles two and each task owes
# exactly one. The tasks are due through their checkpoint, not through staleness.
stale = "8760h"
# Begun-without-answer messages are sent again (the webhook de-duplicates) soon.
unknown_cooldown = "6s"

{receiver.channel_toml(PURPOSES, read_timeout="5s")}
# The two monitors under test, often; a run over 300 tasks takes a second or more,
# so every 2s leaves the pool room for the sends.
[[periodic_jobs]]
name = "longrun-keepalive"
every = "2s"

[[periodic_jobs]]
name = "longrun-watchdog"
every = "2s"

[[periodic_jobs]]
name = "longrun-foreground"
enabled = false

[[periodic_jobs]]
name = "longrun-cleanup"
enabled = false

[[periodic_jobs]]
name = "delivery-dispatch"
every = "1s"
"""


def _messages_per_task() -> dict[str, Counter[int]]:
    """How many outbox messages each task has, per purpose."""
    counts: dict[str, Counter[int]] = {purpose: Counter() for purpose in PURPOSES}
    for purpose, key in Message.objects.values_list("purpose", "idempotency_key"):
        task_id = _task_id_of(key)
        assert task_id is not None, key
        counts[purpose][task_id] += 1
    return counts


def _claims_open() -> int:
    """How many other transactions hold long-task rows locked (FOR UPDATE) at this moment.

    A row lock shows in pg_locks only as its transaction's RowShareLock on the table.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(DISTINCT l.pid) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation"
            " WHERE c.relname = %s AND l.mode = 'RowShareLock' AND l.pid <> pg_backend_pid()",
            [LongTask._meta.db_table],
        )
        return int(cursor.fetchone()[0])


# The worker's log line of a monitor run: the run's counts (longrun.tasks._counts).
_RUN_LINE = re.compile(
    r"Task (longrun\.(?:keepalive|watchdog))\[[^]]+\] succeeded in [^:]+: (\{.*\})"
)


def _run_errors(logs: str) -> list[tuple[str, int]]:
    """The monitor runs the worker logged with error items (a task the run could not handle)."""
    runs = [(m[1], ast.literal_eval(m[2])) for m in _RUN_LINE.finditer(logs)]
    assert runs, "the worker logged no monitor run"
    return [(task, counts["errors"]) for task, counts in runs if counts["errors"]]


def _handling_failures(logs: str) -> str:
    """The log lines of each task a run could not handle, with the traceback after them."""
    lines = logs.splitlines()
    found = [n for n, line in enumerate(lines) if "the run could not handle it" in line]
    return "\n".join("\n".join(lines[n : n + 40]) for n in found) or "(no such log line)"


def _monitor_runs() -> dict[str, int]:
    runs = dict(PeriodicJobState.objects.filter(name__in=MONITORS).values_list("name", "runs"))
    return {job: runs.get(job, 0) for job in MONITORS}


def _assert_task_log_agrees() -> None:
    """Each task's log says what its messages say: planned and queued once, sent once.

    The keepalive logs the attempt and the queued resume, the watchdog the queued
    recovery; the outcome handlers log each confirmed send, and a confirmed resume
    counts (D-B10): once, with the time it was sent. A send that a worker answered
    `unknown` (it raised or timed out, on a machine busy enough) is logged too, once
    for each such attempt; an attempt closed as abandoned after the kill had no
    answer, so no handler ran for it and the log shows nothing.
    """
    answered_unknown = Counter(
        Attempt.objects.filter(outcome="unknown")
        .exclude(detail__startswith="abandoned:")
        .values_list("message_id", flat=True)
    )
    messages = {
        (_task_id_of(key), purpose): (pk, sent_at)
        for pk, purpose, key, sent_at in Message.objects.values_list(
            "pk", "purpose", "idempotency_key", "sent_at"
        )
    }
    logged: dict[int, Counter[tuple[str, str, int | None]]] = {}
    for task_id, kind, purpose, message_id in TaskEvent.objects.filter(
        purpose__in=PURPOSES
    ).values_list("task_id", "kind", "purpose", "message_id"):
        logged.setdefault(task_id, Counter())[(kind, purpose, message_id)] += 1
    for task in LongTask.objects.all():
        resume, resume_sent = messages[(task.pk, RESUME_PURPOSE)]
        recovery, _ = messages[(task.pk, RECOVERY_PURPOSE)]
        assert logged.get(task.pk) == +Counter({
            (TaskEvent.ATTEMPT, RESUME_PURPOSE, None): 1,
            (TaskEvent.QUEUED, RESUME_PURPOSE, resume): 1,
            (TaskEvent.RESUME, RESUME_PURPOSE, resume): 1,
            (TaskEvent.QUEUED, RECOVERY_PURPOSE, recovery): 1,
            (TaskEvent.SENT, RECOVERY_PURPOSE, recovery): 1,
            (TaskEvent.UNKNOWN, RESUME_PURPOSE, resume): answered_unknown[resume],
            (TaskEvent.UNKNOWN, RECOVERY_PURPOSE, recovery): answered_unknown[recovery],
        }), task.name
        assert resume_sent is not None, task.name
        assert (task.last_resume_count, task.last_resume_at) == (1, whole_second(resume_sent))
        assert task.state == "executing"


@pytest.mark.parametrize("what", KILLS)
def test_kill_9_mid_keepalive_and_watchdog_queues_each_resume_and_recovery_once(
    own_services, tmp_path, settings, capsys, what
):
    clear_broker()
    receiver = Receiver(tmp_path, delay=0.02)
    receiver.route_here(settings, PURPOSES)
    # Last active an hour ago (idle: resume), checkpoint "30m" after that (recovery).
    hour_ago = timezone.now() - timedelta(hours=1)
    for n in range(TASKS):
        task_set(f"kill-{n}", key=f"agent:faults:s{n}", next_check="30m", now=hour_ago)
    tasks = set(LongTask.objects.values_list("pk", flat=True))
    assert len(tasks) == TASKS
    processes = CeleryProcesses(tmp_path)
    config = _config(receiver)
    try:
        worker = processes.start("worker", config, name="worker-1")
        processes.start("beat", config)
        # Kill once both monitors are at work, long before either is through, and with
        # a claim open: between a task's claim and its commit.
        claims = wait_for(
            lambda: all(Message.objects.filter(purpose=p).count() >= 20 for p in PURPOSES)
            and _claims_open(),
            timeout=120, what="both monitors under way",
        )
        killed_at = time.monotonic()
        kill_9(worker, what)
        # Read before new pool children (pool children killed) go on with the work.
        queued_at_kill = {p: Message.objects.filter(purpose=p).count() for p in PURPOSES}
        time.sleep(0.5)  # what was in flight on the wire lands (or not) at the receiver
        at_kill = outbox_snapshot()
        if what == "whole worker":
            processes.start("worker", config, name="worker-2")

        def all_sent() -> bool:
            return Message.objects.filter(status="sent").count() >= 2 * TASKS

        wait_for(all_sent, timeout=180, what="every resume and recovery sent after the kill")
        recovery = time.monotonic() - killed_at
        # Two more runs of each monitor after that: they find every task already done.
        ticks = _monitor_runs()
        wait_for(lambda: all(n >= ticks[job] + 2 for job, n in _monitor_runs().items()),
                 timeout=120, what="two more runs of each monitor")
        per_task = _messages_per_task()
        doubled = {p: sorted(t for t, n in per_task[p].items() if n > 1) for p in PURPOSES}
        missing = {p: sorted(tasks - set(per_task[p])) for p in PURPOSES}
        keys = dict(Message.objects.values_list("pk", "idempotency_key"))
        counts = receiver.counts()
        received_twice = {pk for pk, key in keys.items() if counts[key] > 1}
        begun = at_kill["begun, no answer"]
        figures = (
            f"kill -9 ({what}) mid keepalive and watchdog, {TASKS} tasks due for both: "
            f"at the kill {queued_at_kill[RESUME_PURPOSE]} resumes and "
            f"{queued_at_kill[RECOVERY_PURPOSE]} recoveries queued, {claims} claims open, "
            f"{len(at_kill['sent'])} sent, {len(begun)} sends begun without an answer; "
            f"after: resumes queued {len(per_task[RESUME_PURPOSE])}, "
            f"doubled {len(doubled[RESUME_PURPOSE])}, missing {len(missing[RESUME_PURPOSE])}; "
            f"recoveries queued {len(per_task[RECOVERY_PURPOSE])}, "
            f"doubled {len(doubled[RECOVERY_PURPOSE])}, "
            f"missing {len(missing[RECOVERY_PURPOSE])}; received twice {len(received_twice)} "
            f"(all begun before the kill: {received_twice <= begun}), recovery {recovery:.1f}s"
        )
        with capsys.disabled():  # the figures, in the suite's output
            print("\n" + figures)
        # The kill landed while the monitors were working, not after.
        assert sum(queued_at_kill.values()) < 2 * TASKS
        # Exactly one resume and one recovery per task: none doubled, none missing.
        assert doubled == {p: [] for p in PURPOSES}
        assert missing == {p: [] for p in PURPOSES}
        assert Message.objects.exclude(status="sent").count() == 0
        # No run failed a task on the way (a failed task is rolled back and reported,
        # so only its error item would show it).
        logs = processes.logs()
        assert _run_errors(logs) == [], _handling_failures(logs)
        _assert_task_log_agrees()
        # At the receiver: every message, twice only if its send had begun before the
        # kill, and each time under the message's own Idempotency-Key.
        assert all(counts[key] >= 1 for key in keys.values())
        assert received_twice <= begun, sorted(received_twice - begun)
        for request in receiver.requests():
            assert request["header"] == request["key"] == keys[int(request["id"])]
        for pk in at_kill["not begun"]:
            assert counts[keys[pk]] == 1
    finally:
        processes.stop()
        receiver.stop()
