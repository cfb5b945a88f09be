"""A job's missed-run policy (D-C23) and overlap policy (D-C24), driven through the API.

Each plan is proposed and confirmed over the REST API with its policies, the
scheduler is ticked at chosen moments (`manage.py plans tick --now`), runs end through the outbox's answer, and what happened to every fire
time is read back from the plan's timeline (`GET /api/plans/<id>/timeline`).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from io import StringIO
from typing import Any

import pytest
import time_machine
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from plans.models import Entry, Job, Revision, Run
from plans.runpolicy import MAX_CONCURRENT_RUNS
from plans.services import run_record_delivery
from tests.conftest import ApiClient
from tests.plans.test_plans_api import BODY, _error
from xworkmate.delivery.channels.base import Outcome
from xworkmate.delivery.models import Message

pytestmark = pytest.mark.django_db

# 0 9 * * * Asia/Shanghai fires at 01:00Z; the plans are written an hour before.
FIRST_FIRE = datetime(2026, 3, 10, 1, 0, tzinfo=UTC)
DAY = timedelta(days=1)
MINUTE = timedelta(minutes=1)
WRITTEN = FIRST_FIRE - timedelta(hours=1)


def _propose_and_confirm(owner: ApiClient, **fields: Any) -> str:
    with time_machine.travel(WRITTEN, tick=False):
        answer = owner.post("/api/plans/propose", {**BODY, **fields})
        assert answer.status_code == 201, answer.json()
        task: str = answer.json()["plan"]["taskId"]
        confirmed = owner.post(f"/api/plans/{task}/confirm",
                               {"revision": 1, "message": "确认", "turnId": "run-2"})
        assert confirmed.status_code == 200, confirmed.json()
    return task


def _every_minute(owner: ApiClient, **fields: Any) -> str:
    """A plan that fires every minute on the minute, from FIRST_FIRE on."""
    schedule = {"kind": "every", "everyMs": 60_000, "anchorMs": int(FIRST_FIRE.timestamp() * 1000)}
    return _propose_and_confirm(owner, schedule=schedule, **fields)


def _tick(at: datetime) -> str:
    out = StringIO()
    call_command("plans", "tick", "--now", at.isoformat(), stdout=out)
    return out.getvalue()


def _end(fire: datetime, at: datetime) -> None:
    """The run of fire time `fire` answered at `at`: its message was delivered (ok)."""
    run = Run.objects.get(fire_at_ms=int(fire.timestamp() * 1000), status=Run.RUNNING)
    assert run.delivery_message_id is not None
    message = Message.objects.get(id=run.delivery_message_id)
    message.updated_at = at
    run_record_delivery(message, Outcome.SENT, True)


def _fires(owner: ApiClient, task: str, first: datetime, step: timedelta) -> list[tuple[int, str, str]]:
    """The timeline's fire times as (step number, outcome, reason), oldest first."""
    answer = owner.get(f"/api/plans/{task}/timeline")
    assert answer.status_code == 200, answer.json()
    rows = []
    for event in answer.json()["events"]:
        if event["kind"] == "fire":
            at = datetime.fromisoformat(event["at"].replace("Z", "+00:00"))
            rows.append((round((at - first) / step), event["outcome"], event.get("reason", "")))
    return rows


@pytest.fixture
def allowed(settings: Any) -> None:
    settings.PLANS_TIME_CONTROL = True


# --- C2: the missed-run policy (D-C23) ------------------------------------------------------------


def test_skip_runs_no_missed_fire_time_and_runs_again_at_the_next(owner, workspace, allowed):
    task = _propose_and_confirm(owner, missed="skip")
    # Down for three days and two hours: every fire time of it is missed, none runs.
    assert _tick(FIRST_FIRE + 3 * DAY + timedelta(hours=2)).startswith(
        "started 0 run(s), recorded 4 missed fire time(s)")
    down = "missed: the scheduler was not running at this fire time"
    late = ("missed: no tick reached this fire time within 60 s and the job's missed-run "
            "policy is skip")
    assert _fires(owner, task, FIRST_FIRE, DAY) == [
        (0, "missed", down), (1, "missed", down), (2, "missed", down), (3, "missed", late),
    ]
    job = Job.objects.get(entry__task_id=task)
    assert job.next_run_at == FIRST_FIRE + 4 * DAY
    assert _tick(FIRST_FIRE + 4 * DAY + timedelta(seconds=5)).startswith("started 1 run(s)")
    assert _fires(owner, task, FIRST_FIRE, DAY)[-1][:2] == (4, "ran")


def test_run_latest_stays_the_default_and_runs_the_newest_however_late(owner, workspace, allowed):
    task = _propose_and_confirm(owner)
    plan = owner.get(f"/api/plans/{task}").json()["plan"]
    assert (plan["missed"], plan["overlap"]) == ("run-latest", "skip")
    assert "maxLatenessSeconds" not in plan
    # The job of a plan on the defaults reads as before: no policy field in its CronJob.
    assert not {"missed", "maxLatenessSeconds", "overlap"} & set(plan["job"])
    assert _tick(FIRST_FIRE + 3 * DAY + timedelta(hours=2)).startswith("started 1 run(s)")
    assert [row[:2] for row in _fires(owner, task, FIRST_FIRE, DAY)] == [
        (0, "missed"), (1, "missed"), (2, "missed"), (3, "ran"),
    ]


def test_run_all_runs_each_fire_time_within_the_lateness_in_order(owner, workspace, allowed):
    task = _propose_and_confirm(owner, missed="run-all", maxLatenessSeconds=2 * 86_400)
    plan = owner.get(f"/api/plans/{task}").json()["plan"]
    assert (plan["missed"], plan["maxLatenessSeconds"]) == ("run-all", 172_800)
    assert (plan["job"]["missed"], plan["job"]["maxLatenessSeconds"]) == ("run-all", 172_800)
    back = FIRST_FIRE + 3 * DAY + timedelta(hours=1)
    # Days 0 and 1 are more than two days late: missed. Day 2 runs now, day 3 waits.
    assert _tick(back).startswith("started 1 run(s), recorded 2 missed fire time(s)")
    assert Run.objects.filter(status=Run.RUNNING).count() == 1
    _end(FIRST_FIRE + 2 * DAY, back + timedelta(seconds=30))
    # As soon as it ended, the next waiting fire time started: one run at a time.
    running = Run.objects.get(status=Run.RUNNING)
    assert running.fire_at_ms == int((FIRST_FIRE + 3 * DAY).timestamp() * 1000)
    _end(FIRST_FIRE + 3 * DAY, back + timedelta(seconds=50))
    too_late = ("missed: later than the job's maximum lateness (172800 s) when the scheduler "
                "could start it")
    assert _fires(owner, task, FIRST_FIRE, DAY) == [
        (0, "missed", too_late), (1, "missed", too_late), (2, "ran", ""), (3, "ran", ""),
    ]
    job = Job.objects.get(entry__task_id=task)
    assert (job.next_run_at, job.waiting_fire_ms, job.running_at_ms) == (
        FIRST_FIRE + 4 * DAY, [], None)
    assert not Run.objects.filter(status=Run.RUNNING).exists()


def test_run_all_counts_the_lateness_when_a_waiting_fire_time_could_start(
    owner, workspace, allowed
):
    task = _every_minute(owner, missed="run-all", maxLatenessSeconds=120)
    # Back at 3:30: steps 0 and 1 are older than 120 s; step 2 runs, step 3 waits.
    _tick(FIRST_FIRE + 3 * MINUTE + timedelta(seconds=30))
    # Step 2's run takes until 5:40. Step 3 is then 160 s late: missed, never run late;
    # steps 4 and 5 came while the run was out (the overlap policy: skipped).
    _end(FIRST_FIRE + 2 * MINUTE, FIRST_FIRE + 5 * MINUTE + timedelta(seconds=40))
    too_late = ("missed: later than the job's maximum lateness (120 s) when the scheduler "
                "could start it")
    running = "skipped: the previous run was still running at this fire time"
    assert _fires(owner, task, FIRST_FIRE, MINUTE) == [
        (0, "missed", too_late), (1, "missed", too_late), (2, "ran", ""),
        (3, "missed", too_late), (4, "skipped", running), (5, "skipped", running),
    ]
    assert not Run.objects.filter(status=Run.RUNNING).exists()
    assert Job.objects.get(entry__task_id=task).next_run_at == FIRST_FIRE + 6 * MINUTE


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"missed": "sometimes"},
         'missed: must be one of "run-latest", "skip", "run-all" (got "sometimes")'),
        ({"missed": "run-all"},
         'maxLatenessSeconds: required with missed "run-all" (how late a missed fire time '
         "may still run, in seconds)"),
        ({"missed": "run-all", "maxLatenessSeconds": 30},
         "maxLatenessSeconds: must be a whole number of seconds from 60 to 604800 (7 days)"),
        ({"missed": "run-all", "maxLatenessSeconds": 604_801},
         "maxLatenessSeconds: must be a whole number of seconds from 60 to 604800 (7 days)"),
        ({"maxLatenessSeconds": 3600}, 'maxLatenessSeconds: only with missed "run-all"'),
        ({"missed": "run-all", "maxLatenessSeconds": "3600"},
         "maxLatenessSeconds: A valid integer is required."),
        ({"overlap": "queue"},
         'overlap: must be one of "skip", "buffer", "allow" (got "queue")'),
    ],
)
def test_a_bad_policy_is_refused_naming_the_field_and_the_rule_and_writes_nothing(
    owner, workspace, fields, message
):
    answer = owner.post("/api/plans/propose", {**BODY, **fields})
    assert _error(answer, 400, "INVALID_REQUEST") == message
    assert not Entry.objects.exists() and not Revision.objects.exists()
    assert not (workspace / "archives").exists()


# --- C3: the overlap policy (D-C24) ---------------------------------------------------------------


def test_buffer_keeps_the_first_overlapping_fire_time_and_runs_it_when_the_run_ends(
    owner, workspace, allowed
):
    task = _every_minute(owner, overlap="buffer")
    assert (owner.get(f"/api/plans/{task}").json()["plan"]["job"]["overlap"]) == "buffer"
    _tick(FIRST_FIRE + timedelta(seconds=5))  # step 0 runs
    _tick(FIRST_FIRE + MINUTE + timedelta(seconds=5))  # step 1: buffered, no row yet
    job = Job.objects.get(entry__task_id=task)
    assert job.buffered_fire_ms == int((FIRST_FIRE + MINUTE).timestamp() * 1000)
    _tick(FIRST_FIRE + 2 * MINUTE + timedelta(seconds=5))  # step 2: one waits already
    _end(FIRST_FIRE, FIRST_FIRE + 2 * MINUTE + timedelta(seconds=30))
    # The buffered fire time started as soon as the run ended.
    started = Run.objects.get(status=Run.RUNNING)
    assert started.fire_at_ms == job.buffered_fire_ms
    assert started.run_at_ms == int((FIRST_FIRE + 2 * MINUTE + timedelta(seconds=30)).timestamp()
                                    * 1000)
    _end(FIRST_FIRE + MINUTE, FIRST_FIRE + 2 * MINUTE + timedelta(seconds=40))
    full = ("skipped: the previous run was still running and an earlier fire time already "
            "waits to run after it (overlap policy buffer keeps one)")
    assert _fires(owner, task, FIRST_FIRE, MINUTE) == [
        (0, "ran", ""), (1, "ran", ""), (2, "skipped", full),
    ]
    job.refresh_from_db()
    assert (job.buffered_fire_ms, job.next_run_at) == (None, FIRST_FIRE + 3 * MINUTE)
    _tick(FIRST_FIRE + 3 * MINUTE + timedelta(seconds=5))
    assert _fires(owner, task, FIRST_FIRE, MINUTE)[-1][:2] == (3, "ran")


def test_a_buffered_fire_time_that_a_pause_drops_is_recorded(owner, workspace, allowed):
    task = _every_minute(owner, overlap="buffer")
    _tick(FIRST_FIRE + timedelta(seconds=5))
    _tick(FIRST_FIRE + MINUTE + timedelta(seconds=5))
    with time_machine.travel(FIRST_FIRE + MINUTE + timedelta(seconds=10), tick=False):
        assert owner.put(f"/api/plans/{task}", {"enabled": False}).status_code == 200
    assert _fires(owner, task, FIRST_FIRE, MINUTE)[1] == (
        1, "skipped",
        "skipped: the job was paused or cancelled while this fire time waited to run",
    )
    assert Job.objects.get(entry__task_id=task).buffered_fire_ms is None


def test_allow_starts_a_run_beside_the_one_still_out_up_to_the_bound(owner, workspace, allowed):
    task = _every_minute(owner, overlap="allow")
    for step in range(MAX_CONCURRENT_RUNS + 1):
        _tick(FIRST_FIRE + step * MINUTE + timedelta(seconds=5))
    assert Run.objects.filter(status=Run.RUNNING).count() == MAX_CONCURRENT_RUNS
    runs = owner.get(f"/api/plans/{task}/runs").json()
    assert [entry["status"] for entry in runs["entries"]].count("running") == MAX_CONCURRENT_RUNS
    # The oldest ends: the job is still running, marked by the oldest run still out.
    _end(FIRST_FIRE, FIRST_FIRE + 5 * MINUTE + timedelta(seconds=30))
    job = Job.objects.get(entry__task_id=task)
    assert job.running_at_ms == int((FIRST_FIRE + MINUTE + timedelta(seconds=5)).timestamp()
                                    * 1000)
    _tick(FIRST_FIRE + 6 * MINUTE + timedelta(seconds=5))  # room again: step 6 starts
    capacity = (f"skipped: {MAX_CONCURRENT_RUNS} runs of this job were still running at this "
                f"fire time (overlap policy allow runs at most {MAX_CONCURRENT_RUNS} at once)")
    assert _fires(owner, task, FIRST_FIRE, MINUTE) == [
        *((step, "ran", "") for step in range(MAX_CONCURRENT_RUNS)),
        (5, "skipped", capacity), (6, "ran", ""),
    ]
    assert Run.objects.filter(status=Run.RUNNING).count() == MAX_CONCURRENT_RUNS


def test_skip_stays_the_default_overlap_and_records_each_skip(owner, workspace, allowed):
    task = _every_minute(owner)
    _tick(FIRST_FIRE + timedelta(seconds=5))
    assert "skipped 1 fire time(s)" in _tick(FIRST_FIRE + MINUTE + timedelta(seconds=5))
    assert _fires(owner, task, FIRST_FIRE, MINUTE)[1] == (
        1, "skipped", "skipped: the previous run was still running at this fire time")


# --- both: confirmed with the plan, changed by a revision, shown on the review page ----------------


def test_changing_a_policy_is_a_revision_the_job_keeps_the_confirmed_one_until_then(
    owner, workspace
):
    task = _propose_and_confirm(owner, missed="run-all", maxLatenessSeconds=3600)
    with time_machine.travel(WRITTEN + timedelta(minutes=5), tick=False):
        owner.post(f"/api/plans/{task}/request-changes",
                   {"revision": 1, "message": "改成缓冲一次", "turnId": "run-3"})
        revised = owner.post(f"/api/plans/{task}/revise", {
            "turnId": "run-3", "overlap": "buffer", "missed": "skip",
            "steps": ["每天 09:00 读取库存表并生成日报；上一轮未结束时缓冲一次，错过的不补跑"],
        })
        assert revised.status_code == 200, revised.json()
        plan = revised.json()["plan"]
        assert (plan["state"], plan["missed"], plan["overlap"]) == (
            "AWAITING_PLAN_CONFIRMATION", "skip", "buffer")
        assert "maxLatenessSeconds" not in plan  # it belonged to run-all
        job = Job.objects.get(entry__task_id=task)
        assert (job.missed, job.max_lateness_seconds, job.overlap) == ("run-all", 3600, "skip")
        # A policy change alone leaves PLAN.md as it was: refused, as a schedule change is.
        alone = owner.post(f"/api/plans/{task}/revise", {"turnId": "run-4", "overlap": "allow"})
        assert _error(alone, 409, "REFUSED").startswith("F4/F5:")
        assert owner.post(f"/api/plans/{task}/confirm",
                          {"revision": 2, "message": "确认", "turnId": "run-5"}).status_code == 200
    job.refresh_from_db()
    assert (job.missed, job.max_lateness_seconds, job.overlap) == ("skip", None, "buffer")


def test_the_review_page_shows_both_policies_next_to_the_fire_times(owner, workspace):
    task = _propose_and_confirm(owner, missed="run-all", maxLatenessSeconds=7200,
                                overlap="allow")
    person = User.objects.create_superuser("reviewer", "", "pw-reviewer-1")
    browser = Client()
    browser.force_login(person)
    entry = Entry.objects.get(task_id=task)
    with time_machine.travel(WRITTEN, tick=False):
        page = browser.get(f"/admin/plans/entry/{entry.pk}/change/").content.decode()
        zh = browser.get(f"/admin/plans/entry/{entry.pk}/change/",
                         HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    policies = page[page.index('id="run-policies"'):page.index('id="fire-times"')]
    assert "run each one within the maximum lateness, in order" in policies
    assert "at most 7200 s late" in policies and "<code>run-all</code>" in policies
    assert "allow a concurrent run" in policies and "<code>allow</code>" in policies
    assert "confirms these policies too" in page
    zh_policies = zh[zh.index('id="run-policies"'):zh.index('id="fire-times"')]
    assert "在最大延迟内按顺序逐个补跑" in zh_policies and "最多延迟 7200 秒" in zh_policies
    assert "允许并行执行" in zh_policies and "allow a concurrent run" not in zh_policies


def test_under_allow_each_run_keeps_its_own_execution_timeout(owner, workspace, allowed):
    # D-C22 with D-C24: the 60-minute timeout ends the oldest run; the one beside it,
    # started a minute later, is still within its own hour.
    task = _every_minute(owner, overlap="allow")
    _tick(FIRST_FIRE + timedelta(seconds=5))
    _tick(FIRST_FIRE + MINUTE + timedelta(seconds=5))
    job = Job.objects.get(entry__task_id=task)
    # Later fire times are not this test's business: pause the grid past the hour.
    Job.objects.filter(pk=job.pk).update(next_run_at=FIRST_FIRE + 2 * timedelta(hours=1))
    assert "ended 1 timed-out run(s)" in _tick(FIRST_FIRE + timedelta(minutes=60, seconds=30))
    ended = Run.objects.get(fire_at_ms=int(FIRST_FIRE.timestamp() * 1000))
    assert (ended.status, ended.error) == (Run.ERROR, "cron: job execution timed out")
    still = Run.objects.get(status=Run.RUNNING)
    assert still.fire_at_ms == int((FIRST_FIRE + MINUTE).timestamp() * 1000)
    job.refresh_from_db()
    assert job.running_at_ms == still.run_at_ms
    assert "ended 1 timed-out run(s)" in _tick(FIRST_FIRE + timedelta(minutes=61, seconds=30))
    job.refresh_from_db()
    assert job.running_at_ms is None and not Run.objects.filter(status=Run.RUNNING).exists()


def test_a_revision_with_a_bad_policy_is_refused_and_leaves_the_plan_as_it_was(owner, workspace):
    task = _propose_and_confirm(owner, overlap="buffer")
    plan_md = workspace / "archives" / "chat-1" / "PLAN.md"
    before = plan_md.read_text(encoding="utf-8")
    with time_machine.travel(WRITTEN + timedelta(minutes=5), tick=False):
        refused = owner.post(f"/api/plans/{task}/revise", {
            "turnId": "run-3", "missed": "run-all", "steps": ["每天 09:00 全部补跑"],
        })
    assert _error(refused, 400, "INVALID_REQUEST").startswith(
        'maxLatenessSeconds: required with missed "run-all"')
    assert plan_md.read_text(encoding="utf-8") == before and Revision.objects.count() == 1
    entry = Entry.objects.get(task_id=task)
    assert (entry.missed, entry.overlap, entry.state) == ("run-latest", "buffer", Entry.SCHEDULED)
