"""The scheduler tick, run now and the runs' outcomes (§8.5, D-C1, D-C8, D-C10; group E)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from plans.models import Entry, Job, Run
from plans.scheduler import scheduler_tick
from plans.services import (
    entry_confirm,
    job_pause,
    job_run_now,
    run_record_delivery,
)
from tests.plans.conftest import ARCHIVE_ID, NOW
from xworkmate.delivery.channels.base import Outcome
from xworkmate.delivery.models import Message
from xworkmate.delivery.services import message_acknowledge

pytestmark = pytest.mark.django_db

FIRST_FIRE = datetime(2026, 3, 10, 1, 0, tzinfo=UTC)  # 0 9 * * * Asia/Shanghai


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


@pytest.fixture
def job(propose) -> Job:
    entry = propose()
    return entry_confirm(
        task_id=str(entry.task_id), revision=1, message="确认", turn_id="turn-2", now=NOW
    )


def _answer(
    run: Run, outcome: Outcome, *, at: datetime, final: bool = True, error: str = ""
) -> None:
    """What the outbox does when the channel answers: record it, then run the handlers."""
    assert run.delivery_message_id is not None
    message = Message.objects.get(id=run.delivery_message_id)
    message.updated_at = at
    message.last_error = error
    run_record_delivery(message, outcome, final)


def test_a_tick_before_the_fire_time_starts_nothing(job):
    assert scheduler_tick(now=FIRST_FIRE - timedelta(seconds=1)).started == 0
    assert not Run.objects.exists()


def test_a_due_job_runs_once_through_the_outbox(job):
    report = scheduler_tick(now=FIRST_FIRE + timedelta(seconds=3))
    assert report.started == 1
    run = Run.objects.get()
    assert (run.fire_at_ms, run.status, run.forced) == (_ms(FIRST_FIRE), Run.RUNNING, False)
    assert run.revision == job.confirmation.revision
    message = Message.objects.get(pk=run.delivery_message_id)
    assert message.purpose == "plans.run"
    assert message.target == f"agent:ops:cron:{job.job_id}:run:{run.run_id}"
    assert message.body.startswith(
        f"[cron:{job.job_id} 每日库存巡检日报] 从路径 archives/{ARCHIVE_ID}/PLAN.md 中读取 "
        f"Task_ID: {job.entry.task_id} 的详细计划并按步骤执行"
    )
    assert f"archives/{ARCHIVE_ID}/2026-03-10-09-00-03/" in message.body
    assert run.archive_timestamp == "2026-03-10-09-00-03"
    job.refresh_from_db()
    assert job.running_at_ms == _ms(FIRST_FIRE + timedelta(seconds=3))
    # A second tick (or a second beat) finds it running: no second run of one fire time.
    assert scheduler_tick(now=FIRST_FIRE + timedelta(seconds=20)).started == 0
    assert Run.objects.count() == 1 and Message.objects.count() == 1


def test_the_run_is_ok_only_when_the_channel_confirmed_it(job):
    scheduler_tick(now=FIRST_FIRE)
    run = Run.objects.get()
    # Only queued, then an unknown answer that will be retried: still running.
    _answer(run, Outcome.UNKNOWN, at=FIRST_FIRE + timedelta(seconds=10), final=False)
    run.refresh_from_db()
    assert (run.status, run.delivery_status) == (Run.RUNNING, "unknown")
    message = Message.objects.get(pk=run.delivery_message_id)
    message_acknowledge(message=message, by="bridge", now=FIRST_FIRE + timedelta(seconds=30))
    run.refresh_from_db()
    assert (run.status, run.delivered, run.delivery_status) == (Run.OK, True, "delivered")
    assert run.duration_ms == 30_000
    job.refresh_from_db()
    assert (job.last_run_status, job.running_at_ms, job.consecutive_errors) == ("ok", None, 0)
    assert job.last_delivery_status == "delivered"
    assert job.next_run_at == FIRST_FIRE + timedelta(days=1)
    assert run.next_run_at_ms == _ms(job.next_run_at)


def test_64_a_failed_delivery_is_an_error_and_backs_off(job):
    ends = []
    for attempt in range(5):
        due = Job.objects.get(pk=job.pk).next_run_at
        scheduler_tick(now=due)
        run = Run.objects.get(status=Run.RUNNING)
        ended = due + timedelta(seconds=1)
        _answer(run, Outcome.FAILED, at=ended, error="HTTP 500")
        ends.append(ended)
        refreshed = Job.objects.get(pk=job.pk)
        assert refreshed.consecutive_errors == attempt + 1
    backoffs = [30, 60, 300, 900, 3600]
    runs = list(Run.objects.order_by("fire_at_ms"))
    assert [r.status for r in runs] == [Run.ERROR] * 5
    assert runs[0].error == "delivery failed: HTTP 500" and runs[0].delivered is False
    # The daily schedule is later than every backoff: the natural time wins.
    assert refreshed.next_run_at == FIRST_FIRE + timedelta(days=5)
    assert all(
        r.next_run_at_ms >= _ms(end) + b * 1000
        for r, end, b in zip(runs, ends, backoffs, strict=True)
    )


def test_70_run_now_force_due_and_already_running(job):
    task_id = str(job.entry.task_id)
    assert job_run_now(task_id=task_id, mode="due", now=NOW) == {
        "ok": True,
        "ran": False,
        "reason": "not-due",
    }
    assert job_run_now(task_id=task_id, mode="force", now=NOW) == {"ok": True, "ran": True}
    run = Run.objects.get()
    assert run.forced and run.fire_at_ms == _ms(NOW)
    assert job_run_now(task_id=task_id, mode="force", now=NOW + timedelta(seconds=1)) == {
        "ok": True,
        "ran": False,
        "reason": "already-running",
    }


def test_71_a_run_marker_older_than_two_hours_is_cleared(propose):
    # A job without an execution timeout (timeoutSeconds 0): with the default one the
    # run would have ended after 60 minutes (D-C22), before this rule applies.
    entry = propose(job={"payload": {"kind": "agentTurn", "timeoutSeconds": 0}})
    entry_confirm(task_id=str(entry.task_id), revision=1, message="确认", turn_id="turn-2", now=NOW)
    scheduler_tick(now=FIRST_FIRE)
    later = FIRST_FIRE + timedelta(days=1, hours=3)
    report = scheduler_tick(now=later)
    assert report.cleared == 1
    stuck = Run.objects.get(fire_at_ms=_ms(FIRST_FIRE))
    assert (stuck.status, stuck.error) == (Run.ERROR, "cron: clearing stuck running marker")
    # The fire time it held up has its row; the job is eligible again at its next fire
    # time, which is not started before it comes.
    held = Run.objects.get(fire_at_ms=_ms(FIRST_FIRE + timedelta(days=1)))
    assert held.status == Run.SKIPPED
    assert report.started == 0 and not Run.objects.filter(status=Run.RUNNING).exists()
    assert Job.objects.get().next_run_at == FIRST_FIRE + timedelta(days=2)
    assert scheduler_tick(now=FIRST_FIRE + timedelta(days=2, seconds=3)).started == 1


def test_d_c10_after_downtime_the_newest_missed_fire_time_runs_and_the_rest_are_recorded(job):
    back = FIRST_FIRE + timedelta(days=3, hours=2)  # four fire times passed
    report = scheduler_tick(now=back)
    assert (report.started, report.missed) == (1, 3)
    runs = {r.fire_at_ms: r.status for r in Run.objects.all()}
    assert runs == {
        _ms(FIRST_FIRE): Run.MISSED,
        _ms(FIRST_FIRE + timedelta(days=1)): Run.MISSED,
        _ms(FIRST_FIRE + timedelta(days=2)): Run.MISSED,
        _ms(FIRST_FIRE + timedelta(days=3)): Run.RUNNING,
    }


def test_d_c10_a_job_may_skip_and_record_instead(propose):
    entry = propose(missed="skip")
    job = entry_confirm(
        task_id=str(entry.task_id), revision=1, message="确认", turn_id="turn-2", now=NOW
    )
    back = FIRST_FIRE + timedelta(days=1, hours=2)
    report = scheduler_tick(now=back)
    assert (report.started, report.missed) == (0, 2)
    job.refresh_from_db()
    assert job.next_run_at == FIRST_FIRE + timedelta(days=2)
    # On time again, it runs normally.
    assert scheduler_tick(now=FIRST_FIRE + timedelta(days=2)).started == 1


def test_d_c10_a_missed_one_shot_runs_once_on_recovery(propose):
    at = "2026-03-10T02:00:00Z"
    entry = propose(schedule={"kind": "at", "at": at})
    job = entry_confirm(
        task_id=str(entry.task_id), revision=1, message="确认", turn_id="turn-2", now=NOW
    )
    assert job.delete_after_run
    report = scheduler_tick(now=datetime(2026, 3, 12, tzinfo=UTC))
    assert (report.started, report.missed) == (1, 0)
    run = Run.objects.get()
    _answer(run, Outcome.SENT, at=datetime(2026, 3, 12, 0, 0, 5, tzinfo=UTC))
    job.refresh_from_db()
    # case 65: a one-shot that succeeded leaves the schedule (its row and runs are kept).
    assert job.removed_at is not None and not job.enabled and job.next_run_at is None
    assert Entry.objects.get(pk=entry.pk).state == Entry.REMOVED
    assert scheduler_tick(now=datetime(2026, 3, 13, tzinfo=UTC)).started == 0


def test_67_a_one_shot_that_failed_is_disabled_not_retried(propose):
    entry = propose(schedule={"kind": "at", "at": "2026-03-10T02:00:00Z"})
    job = entry_confirm(
        task_id=str(entry.task_id), revision=1, message="确认", turn_id="turn-2", now=NOW
    )
    scheduler_tick(now=datetime(2026, 3, 10, 2, tzinfo=UTC))
    _answer(Run.objects.get(), Outcome.FAILED, at=datetime(2026, 3, 10, 2, 0, 1, tzinfo=UTC))
    job.refresh_from_db()
    assert (job.enabled, job.removed_at, job.next_run_at) == (False, None, None)


def test_a_pause_while_a_run_is_out_is_not_undone_by_its_result(job):
    scheduler_tick(now=FIRST_FIRE)
    job_pause(task_id=str(job.entry.task_id), now=FIRST_FIRE + timedelta(seconds=1))
    _answer(Run.objects.get(), Outcome.SENT, at=FIRST_FIRE + timedelta(seconds=2))
    job.refresh_from_db()
    assert (job.enabled, job.next_run_at) == (False, None)


def test_d_c3_while_a_revision_awaits_confirmation_the_run_carries_the_confirmed_text(job):
    from plans.services import entry_revise

    entry_revise(
        task_id=str(job.entry.task_id), changes={"objective": "改成每小时巡检"},
        turn_id="turn-3", written_by="test", now=NOW + timedelta(minutes=1),
    )
    scheduler_tick(now=FIRST_FIRE)
    body = Message.objects.get(pk=Run.objects.get().delivery_message_id).body
    assert "本次按已确认的第 1 版执行" in body
    assert "每天发现库存异常" in body and "改成每小时巡检" not in body


def test_a_schedule_that_cannot_be_computed_counts_each_tick_and_disables_the_job_at_three(job):
    # Issue 23 A3 (§8.5): a zone gone from the time zone database, as after an upgrade.
    Job.objects.filter(pk=job.pk).update(schedule={**job.schedule, "tz": "Mars/Olympus_Mons"})
    for tick in (1, 2):
        report = scheduler_tick(now=FIRST_FIRE + timedelta(seconds=tick))
        assert (report.started, report.schedule_errors) == (0, 1)
        job.refresh_from_db()
        assert job.schedule_error_count == tick and job.enabled
        assert job.last_error.startswith("schedule error: ")
        assert job.next_run_at == FIRST_FIRE  # still due: the next tick tries again
    scheduler_tick(now=FIRST_FIRE + timedelta(seconds=3))
    job.refresh_from_db()
    assert (job.schedule_error_count, job.enabled, job.next_run_at) == (3, False, None)
    assert job.last_error.startswith("schedule error: ") and "disabled: 3 ticks in a row" in job.last_error
    assert not Run.objects.exists()  # no row of a tick that could not compute survives
    assert scheduler_tick(now=FIRST_FIRE + timedelta(seconds=4)).schedule_errors == 0


def test_a_schedule_computed_again_resets_the_count(job):
    schedule = job.schedule
    Job.objects.filter(pk=job.pk).update(schedule={**schedule, "tz": "Mars/Olympus_Mons"})
    scheduler_tick(now=FIRST_FIRE + timedelta(seconds=1))
    Job.objects.filter(pk=job.pk).update(schedule=schedule)
    assert scheduler_tick(now=FIRST_FIRE + timedelta(seconds=2)).started == 1
    job.refresh_from_db()
    assert job.schedule_error_count == 0
