"""D-C20: every fire time has a row, and an `every` keeps its anchor's grid.

A fire time that passes while the job's previous run is still out is recorded
as skipped (with the reason) by the tick that sees it, or by the run's end when
no tick did; the runs of an every-schedule stand on its anchor's steps however
late the ticks come, and so do the next run and catch-up.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from plans.models import Job, Run
from plans.scheduler import scheduler_tick
from plans.services import entry_confirm, run_record_delivery
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


def _finish(run: Run, at: datetime) -> None:
    assert run.delivery_message_id is not None
    message = Message.objects.get(id=run.delivery_message_id)
    message.updated_at = at
    run_record_delivery(message, Outcome.SENT, True)


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
