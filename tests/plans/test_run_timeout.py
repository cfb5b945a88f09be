"""A run's execution timeout (§8.5, issue 23 A2): 60 minutes unless timeoutSeconds says."""

from __future__ import annotations

from datetime import timedelta

import pytest

from plans.models import Job, Run
from plans.policies import job_shape_problems, run_timed_out
from plans.scheduler import scheduler_tick
from plans.services import entry_confirm, run_record_delivery
from tests.plans.conftest import NOW
from tests.plans.test_scheduler import FIRST_FIRE
from xworkmate.delivery.channels.base import Outcome
from xworkmate.delivery.models import Message

pytestmark = pytest.mark.django_db

HOUR = timedelta(hours=1)


def _confirmed(propose, *, session: str = "agent:ops:user:u-1:direct:chat-1", **payload) -> Job:
    job = {"payload": {"kind": "agentTurn", **payload}} if payload else None
    entry = propose(job=job, session=session)
    return entry_confirm(
        task_id=str(entry.task_id), revision=entry.revision.number, message="确认",
        turn_id="turn-2", now=NOW,
    )


def _started(job: Job) -> Run:
    assert scheduler_tick(now=FIRST_FIRE + timedelta(seconds=3)).started == 1
    return Run.objects.get(job=job)


def test_a_run_without_an_answer_ends_after_60_minutes_as_timed_out(propose):
    job = _confirmed(propose)
    _started(job)
    assert "timeoutSeconds" not in job.payload
    started = FIRST_FIRE + timedelta(seconds=3)
    assert scheduler_tick(now=started + HOUR - timedelta(seconds=1)).timed_out == 0
    assert Run.objects.get(job=job).status == Run.RUNNING
    report = scheduler_tick(now=started + HOUR)
    assert report.timed_out == 1
    run = Run.objects.get(job=job)
    assert (run.status, run.error) == (Run.ERROR, "cron: job execution timed out")
    job.refresh_from_db()
    assert job.running_at_ms is None and job.consecutive_errors == 1
    assert job.last_error == "cron: job execution timed out"
    # The answer that comes after the timeout changes nothing: the run stays as it ended.
    message = Message.objects.get(pk=run.delivery_message_id)
    run_record_delivery(message, Outcome.SENT, True)
    assert Run.objects.get(job=job).status == Run.ERROR


def test_timeout_seconds_sets_the_limit_and_zero_means_none(propose):
    short = _started(_confirmed(propose, timeoutSeconds=120.9))
    assert short.job.payload["timeoutSeconds"] == 120  # floored, as OpenClaw stores it
    started = FIRST_FIRE + timedelta(seconds=3)
    assert scheduler_tick(now=started + timedelta(seconds=119)).timed_out == 0
    assert scheduler_tick(now=started + timedelta(seconds=120)).timed_out == 1

    Run.objects.all().delete()
    Job.objects.all().delete()
    never = _started(_confirmed(propose, session="agent:ops:user:u-1:direct:chat-2",
                                timeoutSeconds=0))
    assert scheduler_tick(now=started + 3 * HOUR / 2).timed_out == 0
    assert Run.objects.get(pk=never.pk).status == Run.RUNNING
    # Only the 2-hour stuck marker rule ends it (§8.5), with its own reason, when the
    # job is next due.
    scheduler_tick(now=started + timedelta(days=1))
    assert Run.objects.get(pk=never.pk).error == "cron: clearing stuck running marker"


@pytest.mark.parametrize("value", [-1, "60", True, float("nan"), 10**12])
def test_a_timeout_that_is_no_number_of_seconds_is_refused(value):
    problems = job_shape_problems({"payload": {"kind": "agentTurn", "timeoutSeconds": value}})
    assert "job.payload.timeoutSeconds: must be a number >= 0 (seconds; 0 = no timeout)" in problems


def test_the_rule_itself():
    assert not run_timed_out({}, running_at_ms=0, now_ms=3_599_999)
    assert run_timed_out({}, running_at_ms=0, now_ms=3_600_000)
    assert not run_timed_out({"timeoutSeconds": 0}, running_at_ms=0, now_ms=10**12)
    assert run_timed_out({"timeoutSeconds": 5}, running_at_ms=0, now_ms=5_000)
