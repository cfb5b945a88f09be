"""One plan's timeline (issue 23 C1): revisions, confirmations and every fire time's row."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine

from plans.models import Job, Run
from plans.scheduler import scheduler_tick
from tests.conftest import ApiClient
from tests.plans.conftest import NOW
from tests.plans.test_plans_api import BODY, _error
from tests.plans.test_scheduler import FIRST_FIRE

pytestmark = pytest.mark.django_db


@pytest.fixture
def scheduled(owner: ApiClient, workspace) -> str:
    # Written and confirmed before the first fire time (09:00 Shanghai on 2026-03-10).
    with time_machine.travel(NOW - timedelta(hours=1), tick=True):
        return _propose_revise_confirm(owner)


def _propose_revise_confirm(owner: ApiClient) -> str:
    task: str = owner.post("/api/plans/propose", BODY).json()["plan"]["taskId"]
    owner.post(f"/api/plans/{task}/request-changes",
               {"revision": 1, "message": "改成 8 点", "turnId": "run-2"})
    owner.post(f"/api/plans/{task}/revise", {"turnId": "run-2", "objective": "每天 8 点发现异常"})
    assert owner.post(f"/api/plans/{task}/confirm",
                      {"revision": 2, "message": "确认", "turnId": "run-3"}).status_code == 200
    return task


def test_it_tells_why_each_fire_time_ran_or_did_not_in_order(owner, scheduled):
    job = Job.objects.get(entry__task_id=scheduled)
    Job.objects.filter(pk=job.pk).update(next_run_at=FIRST_FIRE)
    # Down for three days: three missed, the newest runs and gets no answer; the next
    # tick, a day later, ends it as timed out (D-C22) and finds the day's fire time
    # passed while it was still out: skipped.
    scheduler_tick(now=FIRST_FIRE + timedelta(days=3, seconds=5))
    scheduler_tick(now=FIRST_FIRE + timedelta(days=4, seconds=5))
    answer = owner.get(f"/api/plans/{scheduled}/timeline")
    assert answer.status_code == 200, answer.json()
    body = answer.json()
    assert body["taskId"] == scheduled and body["more"] is False
    kinds = [(e["kind"], e.get("outcome")) for e in body["events"]]
    assert kinds == [
        ("revision", None), ("change-request", None), ("revision", None), ("confirmation", None),
        ("fire", "missed"), ("fire", "missed"), ("fire", "missed"), ("fire", "ran"),
        ("fire", "skipped"),
    ]
    events = body["events"]
    assert [e["revision"] for e in events[:4]] == [1, 1, 2, 2]
    assert events[3]["revisionSha256"] == events[2]["sha256"]  # what was confirmed, exactly
    assert events[4]["reason"] == "missed: the scheduler was not running at this fire time"
    assert (events[7]["status"], events[7]["reason"]) == ("error", "cron: job execution timed out")
    assert events[7]["delivery"]["status"] == "pending" and events[7]["runId"]
    assert events[8]["reason"].startswith("skipped: ")
    assert [e["at"] for e in events] == sorted(e["at"] for e in events)
    assert Run.objects.count() == 5  # one row per fire time, all in the timeline


def test_it_pages_to_the_newest_events_and_downloads_as_a_file(owner, scheduled):
    job = Job.objects.get(entry__task_id=scheduled)
    Job.objects.filter(pk=job.pk).update(next_run_at=FIRST_FIRE)
    scheduler_tick(now=FIRST_FIRE + timedelta(days=3, seconds=5))
    newest = owner.get(f"/api/plans/{scheduled}/timeline?limit=2").json()
    assert newest["more"] is True
    assert [e.get("outcome") for e in newest["events"]] == ["missed", "ran"]
    download = owner.get(f"/api/plans/{scheduled}/timeline?download=1")
    assert download["Content-Disposition"] == (
        f'attachment; filename="plan-{scheduled}-timeline.json"'
    )
    assert _error(owner.get(f"/api/plans/{scheduled}/timeline?limit=0"), 400,
                  "INVALID_REQUEST") == "Invalid query parameter `limit`"
    assert _error(owner.get(f"/api/plans/{scheduled}/timeline?download=yes"), 400,
                  "INVALID_REQUEST") == "download: must be 1 (a file) or left out"


def test_a_plan_not_yet_confirmed_has_its_revisions_only_and_outsiders_see_nothing(
    owner, make_client, workspace
):
    task = owner.post("/api/plans/propose", BODY).json()["plan"]["taskId"]
    events = owner.get(f"/api/plans/{task}/timeline").json()["events"]
    assert [e["kind"] for e in events] == ["revision"]
    assert make_client("gateway:read").get(f"/api/plans/{task}/timeline").status_code == 403
    from tests.plans.test_plans_api import _agent

    stranger = _agent(session="agent:ops:user:u-2:direct:chat-9", name="stranger")
    assert stranger.get(f"/api/plans/{task}/timeline").status_code == 404
