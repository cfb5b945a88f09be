"""Plans with real parts (issue 11): PostgreSQL row locks, a real Celery worker and beat on
Redis, a real webhook receiver.

- two confirmations of one revision, or a confirmation racing a new revision,
  end with exactly one outcome;
- two ticks at once start each due fire time once;
- beat's tick and a worker fire a job, and its run follows what the webhook confirmed;
- the service stopped across fire times and started again catches up: the newest
  missed fire time runs once, the others are recorded as missed, none is lost.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from plans.models import ChangeRequest, Confirmation, Entry, Job, Run
from plans.scheduler import scheduler_tick
from plans.services import (
    PlanGateError,
    Proposal,
    entry_confirm,
    entry_request_changes,
    entry_revise,
    plan_propose,
)
from tests.conftest import configure
from tests.delivery.conftest import use_channels
from tests.integration.conftest import CeleryProcesses, clear_broker, wait_for
from tests.integration.test_delivery_real import SECRET, Receiver
from tests.integration.test_gateway_concurrency import run_together
from xworkmate.config import DeliveryChannel

pytestmark = pytest.mark.integration

PURPOSE = "plans.run"
_sessions = itertools.count()


@pytest.fixture
def workspace(real_services: None, tmp_path: Path, settings: Any) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    configure(settings, "plans", workspace=str(root))
    return root


def _proposal(schedule: dict[str, Any]) -> Proposal:
    return Proposal(
        task_name="巡检",
        persona="运维助理",
        objective="发现异常",
        result="日报",
        steps=("按计划巡检并归档",),
        schedule=schedule,
    )


def _propose(schedule: dict[str, Any] | None = None) -> Entry:
    session = f"agent:ops:user:u:direct:chat-{next(_sessions)}"
    return plan_propose(
        session_key=session,
        proposal=_proposal(schedule or {"kind": "cron", "expr": "0 9 * * *", "tz": "UTC"}),
        turn_id="turn-1",
        written_by="test",
        now=timezone.now(),
    )


def _confirm(entry: Entry, revision: int = 1, turn: str = "turn-2") -> Job:
    return entry_confirm(
        task_id=str(entry.task_id), revision=revision, message="确认", turn_id=turn,
        now=timezone.now(),
    )


def _outcome(work: Callable[[], Any]) -> Callable[[], Any]:
    """The work's answer, or the refusal it raised (expected here, not a thread's crash)."""

    def call() -> Any:
        try:
            return work()
        except PlanGateError as exc:
            return exc

    return call


def test_two_confirmations_of_one_revision_create_one_job(workspace):
    entry = _propose()
    results = run_together(
        [_outcome(lambda: _confirm(entry)), _outcome(lambda: _confirm(entry, turn="turn-3"))]
    )
    jobs = [r for r in results if isinstance(r, Job)]
    refused = [r for r in results if isinstance(r, PlanGateError)]
    assert len(jobs) == 1 and len(refused) == 1, results
    assert "already confirmed" in str(refused[0])
    assert Confirmation.objects.count() == 1 and Job.objects.count() == 1


def _reviser(entry: Entry) -> Callable[[], Entry]:
    """Writes revision 2 of the entry in turn-2, when called."""
    return lambda: entry_revise(
        task_id=str(entry.task_id), changes={"objective": "改了"}, turn_id="turn-2",
        written_by="test", now=timezone.now(),
    )


def test_a_confirmation_racing_a_new_revision_ends_one_way_or_the_other(workspace):
    outcomes = set()
    for _ in range(6):
        entry = _propose()
        results = run_together(
            [_outcome(_reviser(entry)), _outcome(lambda entry=entry: _confirm(entry, turn="turn-3"))]
        )
        assert isinstance(results[0], Entry), results  # the revision is always written
        entry.refresh_from_db()
        assert entry.revision.number == 2 and entry.state == Entry.AWAITING
        if isinstance(results[1], Job):
            # Confirmed first: the job runs revision 1 until revision 2 is confirmed (D-C3).
            assert Job.objects.get(entry=entry).confirmation.revision.number == 1
            outcomes.add("confirmed, then revised")
        else:
            assert isinstance(results[1], PlanGateError), results
            assert str(results[1]).startswith("D-C3: revision 1 is not the one")
            assert not Job.objects.filter(entry=entry).exists()
            outcomes.add("revised, confirmation refused")
    assert outcomes  # each round ended with exactly one of the two stories


def test_a_change_request_racing_a_new_revision_never_deadlocks(workspace):
    # Both record the turn they come from (D-C18) in a table that points at the
    # plan: each holds the plan's row before the entry's, so neither waits on
    # the other in a cycle.
    for _ in range(6):
        entry = _propose()

        def ask(entry: Entry = entry) -> Any:
            return entry_request_changes(
                task_id=str(entry.task_id), revision=1, comment="改时间", turn_id="turn-3",
                now=timezone.now(),
            )

        results = run_together([_outcome(_reviser(entry)), _outcome(ask)])
        assert isinstance(results[0], Entry), results
        assert isinstance(results[1], ChangeRequest) or str(results[1]).startswith("D-C3:"), results


def test_two_ticks_at_once_start_each_due_fire_time_once(workspace):
    past = timezone.now() - timedelta(seconds=30)
    jobs = [_confirm(_propose()) for _ in range(20)]
    Job.objects.filter(pk__in=[j.pk for j in jobs]).update(next_run_at=past)
    now = timezone.now()
    reports = run_together([lambda: scheduler_tick(now=now) for _ in range(4)])
    assert sum(report.started for report in reports) == 20, reports
    assert Run.objects.count() == 20
    assert set(Run.objects.values_list("job_id", flat=True)) == {j.pk for j in jobs}


@pytest.fixture
def routed(real_services: None, settings: Any) -> Iterator[Receiver]:
    receiver = Receiver()
    channel = DeliveryChannel(name="hook", kind="webhook", url=receiver.url, secret=SECRET)
    use_channels(settings, channel, routes={PURPOSE: "hook"})
    clear_broker()
    yield receiver
    clear_broker()
    receiver.close()


def _worker_config(receiver: Receiver, workspace: Path) -> str:
    # beat ticks every second here (the default is 15 s), so the test is short.
    return (
        f'[plans]\nworkspace = "{workspace}"\n'
        "[[delivery.channels]]\n"
        f'name = "hook"\nkind = "webhook"\nurl = "{receiver.url}"\nsecret = "{SECRET}"\n'
        f'[delivery.routes]\n"{PURPOSE}" = "hook"\n'
        '[[periodic_jobs]]\nname = "plans-tick"\nevery = "1s"\n'
        '[[periodic_jobs]]\nname = "plans-reconcile"\nenabled = false\n'
    )


def _start(processes: CeleryProcesses, config: str) -> None:
    processes.start("worker", config)
    processes.start("beat", config)


def test_beat_and_a_worker_fire_a_job_and_its_run_follows_the_webhooks_answer(
    workspace, routed, celery_processes
):
    entry = _propose({"kind": "every", "everyMs": 3_600_000})
    job = _confirm(entry)
    # Due now: the first fire time of an hourly job would make the test wait an hour.
    Job.objects.filter(pk=job.pk).update(next_run_at=timezone.now())
    _start(celery_processes, _worker_config(routed, workspace))
    wait_for(
        lambda: Run.objects.filter(job=job, status=Run.OK).exists(),
        timeout=60, what=f"a delivered run\n{celery_processes.logs()[-4000:]}",
    )
    run = Run.objects.get(job=job)
    assert (run.delivered, run.delivery_status) == (True, "delivered")
    (headers, body), = routed.bodies
    assert headers["Idempotency-Key"] == f"{job.job_id}:{run.fire_at_ms}"
    assert f"中读取 Task_ID: {entry.task_id} 的详细计划并按步骤执行" in body.decode()
    job.refresh_from_db()
    assert job.last_run_status == "ok" and job.last_delivered is True
    assert job.running_at_ms is None and job.next_run_at is not None


def test_a_service_stopped_across_fire_times_catches_up_when_it_starts_again(
    workspace, routed, celery_processes
):
    every = 2000
    entry = _propose({"kind": "every", "everyMs": every})
    job = _confirm(entry)
    config = _worker_config(routed, workspace)
    _start(celery_processes, config)
    wait_for(lambda: Run.objects.filter(job=job, status=Run.OK).count() >= 2, timeout=60,
             what=f"two runs\n{celery_processes.logs()[-4000:]}")
    celery_processes.stop()
    celery_processes.procs.clear()
    stopped_at = timezone.now()
    # Down for at least three fire times.
    wait_for(lambda: timezone.now() > stopped_at + timedelta(milliseconds=3 * every + 500),
             timeout=20, what="downtime")
    before = Run.objects.filter(job=job).count()
    _start(celery_processes, config)
    wait_for(lambda: Run.objects.filter(job=job, status=Run.MISSED).exists(), timeout=60,
             what=f"missed runs recorded\n{celery_processes.logs()[-4000:]}")
    wait_for(lambda: Run.objects.filter(job=job).count() >= before + 3, timeout=60,
             what="runs after the restart")
    celery_processes.stop()
    fire_times = list(Run.objects.filter(job=job).order_by("fire_at_ms")
                      .values_list("fire_at_ms", "status"))
    stamps = [ms for ms, _ in fire_times]
    assert len(stamps) == len(set(stamps))  # no fire time ran twice
    # Between the first and the last run, no fire time is lost: a run or a missed row
    # at least every interval (a run starts up to a tick late, and the next one counts
    # from its start, as OpenClaw's does).
    assert all(b - a < 2 * every for a, b in itertools.pairwise(stamps)), fire_times
    # Fire times that passed while nothing ran are recorded as missed (the worker's
    # start-up may have added some before the first run, too).
    stopped_ms = int(stopped_at.timestamp() * 1000)
    assert any(ms > stopped_ms for ms, status in fire_times if status == Run.MISSED), fire_times


def test_a_confirmation_racing_the_expiry_ends_one_way_or_the_other(workspace):
    # D-C25: the tick's compare-and-swap UPDATE and a confirmation holding the entry's row
    # never both win: a job with an expired entry, or an expiry row beside a job, is wrong.
    from plans.models import Expiry
    from plans.services.expiry import entries_expire

    outcomes = set()
    for _ in range(6):
        entry = _propose()
        deadline = entry.revision.written_at + timedelta(days=7)

        def confirm(entry: Entry = entry, at: Any = deadline - timedelta(seconds=1)) -> Any:
            return entry_confirm(task_id=str(entry.task_id), revision=1, message="确认",
                                 turn_id="turn-3", now=at)

        def expire(after: Any = deadline + timedelta(seconds=1)) -> Any:
            return entries_expire(now=after)

        results = run_together([_outcome(confirm), _outcome(expire)])
        entry.refresh_from_db()
        expired = Expiry.objects.filter(entry=entry).exists()
        if isinstance(results[0], Job):
            assert entry.state == Entry.SCHEDULED and not expired, results
            outcomes.add("confirmed")
        else:
            assert str(results[0]).startswith("D-C25: revision 1 "), results
            assert entry.state == Entry.EXPIRED and expired
            assert not Job.objects.filter(entry=entry).exists()
            outcomes.add("expired")
    assert outcomes
