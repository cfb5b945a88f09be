"""D-C20: every fire time has a row, and an `every` keeps its anchor's grid; D-C21: so
does a fire time passed in an error backoff.

A fire time that passes while the job's previous run is still out is recorded
as skipped (with the reason) by the tick that sees it, or by the run's end when
no tick did; the runs of an every-schedule stand on its anchor's steps however
late the ticks come, and so do the next run and catch-up.

OpenClaw does not run a job in error backoff at its fire times (D-C8: the next run
waits at least 30 s, 1 min, 5 min, 15 min, 60 min after the failed run ended). Each
such fire time gets a `skipped` row naming the backoff, and the run after the
backoff is the first fire time of the job's own grid at or after its end, so an
`every` keeps its anchor's steps and no run stands on an off-grid time.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from plans.models import Job, Run
from plans.policies import BACKOFF_MS, job_outcome
from plans.scheduler import scheduler_tick
from plans.services import entry_confirm, job_run_now, run_record_delivery
from xworkmate.delivery.channels.base import Outcome
from xworkmate.delivery.models import Message

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 3, 10, 0, 0, tzinfo=UTC)
ANCHOR = NOW + timedelta(minutes=1)
MINUTE = 60_000


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


@pytest.fixture
def every_minute(propose) -> Job:
    entry = propose(
        now=NOW, schedule={"kind": "every", "everyMs": MINUTE, "anchorMs": _ms(ANCHOR)},
        result="每分钟巡检一次", steps=("每分钟读取库存表",),
    )
    return entry_confirm(task_id=str(entry.task_id), revision=1, message="确认",
                         turn_id="turn-2", now=NOW)


def _finish(run: Run, at: datetime, outcome: Outcome = Outcome.SENT) -> None:
    """The run's message answered at `at` (for good): sent, or failed (an error run)."""
    assert run.delivery_message_id is not None
    message = Message.objects.get(id=run.delivery_message_id)
    message.updated_at = at
    run_record_delivery(message, outcome, True)


def _rows(job: Job) -> list[tuple[int, str]]:
    return [((r.fire_at_ms - _ms(ANCHOR)) // MINUTE, r.status)
            for r in Run.objects.filter(job=job).order_by("fire_at_ms")]


def test_fire_times_passing_during_a_run_are_skipped_with_the_reason(every_minute):
    job = every_minute
    scheduler_tick(now=ANCHOR + timedelta(seconds=5))  # the run of step 0 starts
    for minute in (1, 2, 3):  # the run is still out at each of the next fire times
        report = scheduler_tick(now=ANCHOR + timedelta(minutes=minute, seconds=5))
        assert (report.started, report.skipped) == (0, 1)
    run = Run.objects.get(status=Run.RUNNING)
    _finish(run, ANCHOR + timedelta(minutes=3, seconds=30))
    assert _rows(job) == [(0, "ok"), (1, "skipped"), (2, "skipped"), (3, "skipped")]
    skipped = Run.objects.filter(status=Run.SKIPPED)
    assert {r.error for r in skipped} == {
        "skipped: the previous run was still running at this fire time"
    }
    # The next run is the grid's next step, and runs on it.
    job.refresh_from_db()
    assert job.next_run_at == ANCHOR + timedelta(minutes=4)
    scheduler_tick(now=ANCHOR + timedelta(minutes=4, seconds=9))
    assert _rows(job)[-1] == (4, "running")


def test_a_fire_time_no_tick_saw_during_the_run_is_recorded_when_it_ends(every_minute):
    job = every_minute
    scheduler_tick(now=ANCHOR + timedelta(seconds=5))
    # Step 1 passes while the run is out; it ends before any tick looked.
    _finish(Run.objects.get(status=Run.RUNNING), ANCHOR + timedelta(minutes=1, seconds=2))
    assert _rows(job) == [(0, "ok"), (1, "skipped")]
    job.refresh_from_db()
    assert job.next_run_at == ANCHOR + timedelta(minutes=2)


def test_late_ticks_keep_the_runs_on_the_anchor_grid(every_minute):
    job = every_minute
    for step in range(4):
        due = Job.objects.get(pk=job.pk).next_run_at
        assert due == ANCHOR + timedelta(minutes=step)
        # Each tick comes 15 s late, each run takes 10 s.
        scheduler_tick(now=due + timedelta(seconds=15))
        run = Run.objects.get(status=Run.RUNNING)
        assert run.fire_at_ms == _ms(ANCHOR + timedelta(minutes=step))
        _finish(run, due + timedelta(seconds=25))
    assert _rows(job) == [(0, "ok"), (1, "ok"), (2, "ok"), (3, "ok")]


def test_catch_up_after_an_outage_uses_the_same_grid(every_minute):
    job = every_minute
    scheduler_tick(now=ANCHOR + timedelta(seconds=20))
    _finish(Run.objects.get(status=Run.RUNNING), ANCHOR + timedelta(seconds=30))
    # Down from step 1 to step 4: three missed, the newest runs.
    scheduler_tick(now=ANCHOR + timedelta(minutes=4, seconds=40))
    assert _rows(job) == [(0, "ok"), (1, "missed"), (2, "missed"), (3, "missed"), (4, "running")]


# --- D-C21: error backoff ----------------------------------------------------------------


def _backoff_note(errors: int) -> str:
    return f"skipped: the job was in error backoff at this fire time ({errors} consecutive errors)"


def _two_failures(job: Job) -> None:
    """Steps 0 and 1 fail, each 5 s after its fire time: the second backoff (1 min)
    outlasts step 2."""
    for step in (0, 1):
        scheduler_tick(now=ANCHOR + timedelta(minutes=step, seconds=1))
        _finish(Run.objects.get(status=Run.RUNNING), ANCHOR + timedelta(minutes=step, seconds=5),
                Outcome.FAILED)


def test_a_fire_time_passed_in_error_backoff_is_skipped_and_the_job_stays_on_its_grid(
    every_minute,
):
    job = every_minute
    _two_failures(job)
    job.refresh_from_db()
    assert job.consecutive_errors == 2
    # Backoff ends at step 2 + 5 s; the job waits for its next step, not that instant.
    assert job.next_run_at == ANCHOR + timedelta(minutes=3)
    assert scheduler_tick(now=ANCHOR + timedelta(minutes=2, seconds=6)).started == 0
    report = scheduler_tick(now=ANCHOR + timedelta(minutes=3, seconds=1))
    assert (report.started, report.skipped) == (1, 1)
    assert _rows(job) == [(0, "error"), (1, "error"), (2, "skipped"), (3, "running")]
    assert all((r.fire_at_ms - _ms(ANCHOR)) % MINUTE == 0 for r in Run.objects.all())
    assert Run.objects.get(status=Run.SKIPPED).error == _backoff_note(2)
    _finish(Run.objects.get(status=Run.RUNNING), ANCHOR + timedelta(minutes=3, seconds=5))
    job.refresh_from_db()
    assert job.next_run_at == ANCHOR + timedelta(minutes=4)  # and on, on the grid


@pytest.fixture
def every_minute_cron(propose) -> Job:
    entry = propose(now=NOW, schedule={"kind": "cron", "expr": "* * * * *", "tz": "UTC"},
                    result="每分钟巡检一次", steps=("每分钟读取库存表",))
    return entry_confirm(task_id=str(entry.task_id), revision=1, message="确认",
                         turn_id="turn-2", now=NOW)


def test_a_cron_jobs_minutes_in_a_five_minute_backoff_each_have_a_row(every_minute_cron):
    job = every_minute_cron
    for _ in range(3):  # the third error backs off 5 minutes
        due = Job.objects.get(pk=job.pk).next_run_at
        assert due is not None
        scheduler_tick(now=due + timedelta(seconds=1))
        _finish(Run.objects.get(status=Run.RUNNING), due + timedelta(seconds=3), Outcome.FAILED)
    job.refresh_from_db()
    failed_at = due
    assert job.next_run_at == failed_at + timedelta(minutes=6)  # the minute after 5 min 3 s
    scheduler_tick(now=job.next_run_at + timedelta(seconds=1))
    after = [(r.fire_at_ms - _ms(failed_at)) // MINUTE for r in Run.objects.filter(
        job=job, fire_at_ms__gt=_ms(failed_at)).order_by("fire_at_ms")]
    statuses = list(Run.objects.filter(job=job, fire_at_ms__gt=_ms(failed_at))
                    .order_by("fire_at_ms").values_list("status", "error"))
    assert after == [1, 2, 3, 4, 5, 6]
    assert statuses[:5] == [(Run.SKIPPED, _backoff_note(3))] * 5
    assert statuses[5][0] == Run.RUNNING


def test_an_outage_after_the_backoff_records_skipped_then_missed_rows(every_minute):
    job = every_minute
    _two_failures(job)
    # Down from before step 2 to after step 5: step 2 fell in the backoff, steps 3 and 4
    # passed with no scheduler (D-C10), the newest runs.
    scheduler_tick(now=ANCHOR + timedelta(minutes=5, seconds=30))
    assert _rows(job) == [(0, "error"), (1, "error"), (2, "skipped"), (3, "missed"),
                          (4, "missed"), (5, "running")]


def test_a_run_forced_during_the_backoff_still_leaves_a_row_for_its_fire_times(every_minute):
    job = every_minute
    _two_failures(job)
    # Forced at step 1 + 30 s, it ends at step 2 + 30 s: step 2 passed in the backoff.
    job_run_now(task_id=str(job.entry.task_id), mode="force",
                now=ANCHOR + timedelta(minutes=1, seconds=30))
    _finish(Run.objects.get(status=Run.RUNNING), ANCHOR + timedelta(minutes=2, seconds=30))
    step_2 = Run.objects.get(job=job, fire_at_ms=_ms(ANCHOR + timedelta(minutes=2)))
    assert step_2.status == Run.SKIPPED
    job.refresh_from_db()
    assert job.next_run_at == ANCHOR + timedelta(minutes=3)


def test_after_an_error_an_every_waits_for_its_first_step_at_or_after_the_backoff():
    every = {"kind": "every", "everyMs": 20_000, "anchorMs": 0}
    t = 1_773_104_400_000  # a step of the grid
    for errors, expected in ((0, t + 40_000), (1, t + 80_000), (2, t + 320_000)):
        outcome = job_outcome(every, status="error", ended_ms=t + 5_000,
                              consecutive_errors=errors, host_tz="UTC", job_id="j",
                              run_at_ms=t)
        # 30 s, 1 min, 5 min after the end, rounded up to the 20 s grid.
        assert outcome.next_run_ms == expected
        assert expected >= t + 5_000 + BACKOFF_MS[errors]
