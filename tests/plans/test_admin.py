"""The plans admin: the list's statuses, the review page, and its actions (§6, §11 G, D-C5)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
import time_machine
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import translation

from plans.admin._common import _STATUS_LABELS
from plans.models import ChangeRequest, Confirmation, Entry, Job, Plan, Revision, Run
from plans.planfile import parse_plan_file
from plans.policies import display_status
from plans.review import MAX_OUTPUTS, run_outputs
from plans.services import entry_confirm, entry_revise, run_record_delivery
from tests.conftest import csrf_token
from tests.plans.conftest import ARCHIVE_ID, later

pytestmark = pytest.mark.django_db

LIST = "/admin/plans/entry/"
# The review page's clock: five minutes after the fixtures' proposal (00:30Z).
REVIEWED_AT = "2026-03-10T00:35:00Z"


def _review(entry: Entry) -> str:
    return f"/admin/plans/entry/{entry.pk}/change/"


def _action(entry: Entry, name: str) -> str:
    return f"/admin/plans/entry/{entry.pk}/{name}/"


@pytest.fixture(autouse=True)
def clock() -> Iterator[None]:
    with time_machine.travel(REVIEWED_AT, tick=False):
        yield


@pytest.fixture
def viewer(db: None) -> Client:
    """Staff who may look at plans but not review them (no plans.add_confirmation)."""
    user = User.objects.create_user("viewer", password="pw-viewer-1", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_entry"))
    client = Client()
    client.force_login(user)
    return client


def _post(client: Client, entry: Entry, action: str, **data: Any) -> Any:
    data["csrfmiddlewaretoken"] = csrf_token(client, _review(entry))
    return client.post(_action(entry, action), data, follow=True)


def _messages(response: Any) -> list[str]:
    return [str(message) for message in response.context["messages"]]


def _confirmed(propose: Any, reviewer: User) -> Entry:
    entry: Entry = propose()
    number = entry.revision.number
    entry_confirm(task_id=str(entry.task_id), revision=number, user=reviewer, now=later(5))
    entry.refresh_from_db()
    return entry


# --- the list ---------------------------------------------------------------------------------------


def test_it_lists_plans_with_their_display_status_next_run_and_revision(propose, browser, reviewer):
    awaiting = propose(task_name="待确认的计划")
    scheduled = _confirmed(propose, reviewer)
    paused = _confirmed(propose, reviewer)
    Job.objects.filter(entry=paused).update(enabled=False, next_run_at=None)
    failed = _confirmed(propose, reviewer)
    Job.objects.filter(entry=failed).update(last_run_status="error")

    page = browser.get(LIST).content.decode()
    rows = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0].split("</tr>")

    def row_of(entry):
        [row] = [row for row in rows if f"/{entry.pk}/change/" in row]
        return row

    assert "xw-status-none" in row_of(awaiting) and "awaiting confirmation" in row_of(awaiting)
    assert "xw-status-pending" in row_of(scheduled)
    assert "2026-03-10 09:00:00 CST" in row_of(scheduled)  # in the plan's zone
    assert "xw-status-disabled" in row_of(paused) and ">paused<" in row_of(paused)
    assert "xw-status-failed" in row_of(failed)
    assert ARCHIVE_ID in row_of(scheduled)

    filtered = browser.get(LIST, {"state": Entry.AWAITING}).content.decode()
    assert "待确认的计划" in filtered and f"/{scheduled.pk}/change/" not in filtered
    searched = browser.get(LIST, {"q": "待确认"}).content.decode()
    assert f"/{awaiting.pk}/change/" in searched and f"/{scheduled.pk}/change/" not in searched


def test_the_chinese_display_statuses_are_those_of_the_policy():
    jobs = {
        "disabled": {"enabled": False, "running_at_ms": None, "last_run_status": ""},
        "running": {"enabled": True, "running_at_ms": 1, "last_run_status": ""},
        "done": {"enabled": True, "running_at_ms": None, "last_run_status": "ok"},
        "failed": {"enabled": True, "running_at_ms": None, "last_run_status": "error"},
        "skipped": {"enabled": True, "running_at_ms": None, "last_run_status": "skipped"},
        "pending": {"enabled": True, "running_at_ms": None, "last_run_status": ""},
    }
    with translation.override("zh-hans"):
        for code, job in jobs.items():
            assert display_status(**job) == (code, str(_STATUS_LABELS[code]))


def test_the_model_pages_are_read_only(propose, browser, reviewer):
    entry = _confirmed(propose, reviewer)
    assert browser.get("/admin/plans/entry/add/").status_code == 403
    assert browser.get(f"/admin/plans/entry/{entry.pk}/delete/").status_code == 403
    page = browser.get(_review(entry)).content.decode()
    assert 'name="_save"' not in page
    # The change URL is the review page: a POST there changes nothing.
    response = browser.post(_review(entry), {"task_name": "x"})
    assert response.status_code in (403, 405)
    entry.refresh_from_db()
    assert entry.task_name == "每日库存巡检日报"
    for page_url in ("/admin/plans/plan/", "/admin/plans/run/"):
        assert browser.get(page_url).status_code == 200


# --- the review page ----------------------------------------------------------------------------------


def test_the_review_page_shows_the_plan_the_diff_the_fire_times_and_the_job_it_would_create(
    propose, browser
):
    entry = propose()
    entry_revise(
        task_id=str(entry.task_id),
        changes={"objective": "每天发现库存异常并提醒采购"},
        turn_id="turn-2",
        written_by="ops-agent",
        now=later(1),
    )
    entry.refresh_from_db()
    page = browser.get(_review(entry), {"tz": "UTC"}).content.decode()

    assert "PLAN.md, revision 2" in page
    assert 'class="xw-plan-entry"' in page and "<strong>Objective</strong>" in page
    # The diff against revision 1, line by line.
    assert (
        '<span class="xw-diff-del">-- **Objective**: 每天发现库存异常，体现 SOUL.md 的主动负责</span>'
        in page
    )
    assert '<span class="xw-diff-add">+- **Objective**: 每天发现库存异常并提醒采购</span>' in page
    # The next 10 fire times, in the plan's zone and the reviewer's (UTC here).
    times = re.findall(r"<td>(2026-03-\d\d 09:00:00 CST)</td>", page)
    assert times == [f"2026-03-{day:02d} 09:00:00 CST" for day in range(10, 20)]
    assert (
        "<td>2026-03-10 01:00:00 UTC</td>" in page and "<td>2026-03-10T01:00:00.000Z</td>" in page
    )
    assert "Every day at 09:00 (Asia/Shanghai)" in page
    # The exact cron.add request (D-C7, D-C9).
    proposed = page.split('id="proposed-job"', 1)[1].split("</section>", 1)[0]
    for line in (
        "&quot;sessionTarget&quot;: &quot;isolated&quot;",
        "&quot;wakeMode&quot;: &quot;now&quot;",
        "&quot;kind&quot;: &quot;agentTurn&quot;",
        f"从路径 archives/{ARCHIVE_ID}/PLAN.md 中读取 Task_ID: {entry.task_id} 的详细计划并按步骤执行",
        "&quot;mode&quot;: &quot;none&quot;",
        "&quot;bestEffort&quot;: true",
        "&quot;expr&quot;: &quot;0 9 * * *&quot;",
    ):
        assert line in proposed, line
    # Who asked, in which conversation.
    provenance = page.split('id="plan-provenance"', 1)[1].split("</section>", 1)[0]
    assert "agent:ops:user:u-1:direct:chat-1" in provenance
    assert "turn-2" in provenance and "ops-agent" in provenance
    assert 'value="Confirm revision 2"' in page and 'name="revision" value="2"' in page


def test_the_first_revision_shows_everything_as_new_and_the_reviewer_may_pick_a_zone(
    propose, browser
):
    entry = propose()
    page = browser.get(_review(entry), {"tz": "America/New_York"}).content.decode()
    assert "Revision 1 is the first" in page
    assert '<span class="xw-diff-add">+### [Task_ID: ' in page
    assert "<td>2026-03-09 21:00:00 EDT</td>" in page
    assert "your time (America/New_York)" in page
    bad = browser.get(_review(entry), {"tz": "Mars/Base"}).content.decode()
    assert "&#x27;Mars/Base&#x27; is not an IANA time zone" in bad


def test_an_xss_attempt_in_a_plan_is_escaped(propose, browser, workspace):
    attack = "<script>alert('x')</script><img src=x onerror=alert(1)>"
    entry = propose(task_name=f"日报{attack}", objective=f"目标 {attack} **粗体**")
    page = browser.get(_review(entry)).content.decode()
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "<strong>粗体</strong>" in page  # the renderer's own markup still works
    listing = browser.get(LIST).content.decode()
    assert "<script>alert" not in listing and "&lt;script&gt;" in listing


def test_a_plan_md_problem_on_disk_is_shown(propose, browser):
    entry = propose()
    entry.plan.problem = "line 3: missing required field(s): Status"
    entry.plan.save()
    page = browser.get(_review(entry)).content.decode()
    assert 'id="plan-problem"' in page and "line 3: missing required field(s): Status" in page


def test_a_landed_plan_shows_what_changed_since_the_revision_its_job_runs(
    propose, browser, reviewer
):
    entry = _confirmed(propose, reviewer)
    for turn, objective in (("turn-3", "第一次修改"), ("turn-4", "第二次修改")):
        entry_revise(
            task_id=str(entry.task_id),
            changes={"objective": objective},
            turn_id=turn,
            written_by="agent",
            now=later(10),
        )
    entry.refresh_from_db()
    page = browser.get(_review(entry)).content.decode()
    assert "Changes since revision 2" in page
    assert "Changes since revision 1, the one the job runs now" in page
    assert "3 — awaiting confirmation — revision 1 is confirmed" in page
    assert 'value="Confirm revision 3"' in page and 'id="proposed-job"' in page
    assert Job.objects.get().confirmation.revision.number == 1  # D-C3


def test_an_entry_without_a_proposed_schedule_cannot_be_confirmed_from_the_page(propose, browser):
    entry = propose()
    Entry.objects.filter(pk=entry.pk).update(schedule=None)
    page = browser.get(_review(entry)).content.decode()
    assert "No schedule was proposed for this entry" in page
    assert 'id="confirm-form"' not in page and 'id="proposed-job"' not in page


def test_the_plan_page_lists_its_entries_and_its_problem(propose, browser):
    entry = propose()
    entry.plan.problem = "line 9: an entry heading must be `### [Task_ID: <uuid>] <name>` (R6)"
    entry.plan.save()
    listing = browser.get("/admin/plans/plan/").content.decode()
    assert ARCHIVE_ID in listing and 'title="line 9: an entry heading' in listing
    # No boolean icons: a red ✗ for "no problem" read as a problem (issue 22).
    assert "icon-yes.svg" not in listing and "icon-no.svg" not in listing
    page = browser.get(f"/admin/plans/plan/{entry.plan.pk}/change/").content.decode()
    assert _review(entry) in page and "line 9: an entry heading" in page
    entry.plan.problem = ""
    entry.plan.save()
    listing = browser.get("/admin/plans/plan/").content.decode()
    assert "icon-no.svg" not in listing and "field-has_problem\">—<" in listing


# --- confirm and request changes -------------------------------------------------------------------


def test_confirming_creates_the_job_and_shows_its_next_run(propose, browser, reviewer):
    entry = propose()
    response = _post(browser, entry, "confirm", revision="1")
    assert response.status_code == 200
    assert _messages(response) == [
        "Revision 1 is confirmed; the job is on the schedule. Next run: 2026-03-10 09:00:00 CST."
    ]
    job = Job.objects.get()
    assert job.confirmation.how == Confirmation.ADMIN and job.confirmation.confirmed_by == reviewer
    assert job.next_run_at.isoformat() == "2026-03-10T01:00:00+00:00"
    page = response.content.decode()
    assert 'id="job-next-run">2026-03-10 09:00:00 CST<' in page
    assert 'id="confirm-form"' not in page and "revision 1 is confirmed" in page
    assert job.job_id in page.split('id="job-json"', 1)[1]


def test_a_stale_page_cannot_confirm_a_newer_revision(propose, browser):
    entry = propose()
    token = csrf_token(browser, _review(entry))  # the page shows revision 1
    entry_revise(
        task_id=str(entry.task_id),
        changes={"objective": "改了目标"},
        turn_id="turn-2",
        written_by="agent",
        now=later(1),
    )
    response = browser.post(
        _action(entry, "confirm"),
        {"revision": "1", "csrfmiddlewaretoken": token},
        follow=True,
    )
    assert _messages(response) == [
        "D-C3: revision 1 is not the one awaiting confirmation; revision 2 is"
    ]
    assert 'class="error"' in response.content.decode()
    assert not Job.objects.exists() and not Confirmation.objects.exists()


def test_a_confirmation_without_a_revision_number_is_refused(propose, browser):
    entry = propose()
    response = _post(browser, entry, "confirm", revision="")
    assert _messages(response) == [
        "revision: required, the number of the revision shown on the page"
    ]
    assert not Job.objects.exists()


def test_requesting_changes_records_the_comment(propose, browser, reviewer):
    entry = propose()
    response = _post(browser, entry, "request-changes", revision="1", comment="改成每天 8 点")
    assert _messages(response) == [
        "Your change request for revision 1 is recorded; nothing is scheduled."
    ]
    change = ChangeRequest.objects.get()
    assert (change.comment, change.requested_by, change.how) == ("改成每天 8 点", reviewer, "admin")
    entry.refresh_from_db()
    assert entry.state == Entry.REVISING and not Job.objects.exists()
    assert "改成每天 8 点" in response.content.decode()
    empty = _post(browser, entry, "request-changes", revision="1", comment="  ")
    assert _messages(empty) == ["comment: required, what should change"]
    assert ChangeRequest.objects.count() == 1


def test_csrf_is_enforced(propose, browser):
    entry = propose()
    response = browser.post(_action(entry, "confirm"), {"revision": "1"})
    assert response.status_code == 403
    assert not Job.objects.exists()


def test_a_person_without_the_plans_permission_may_look_but_not_act(propose, viewer, reviewer):
    entry = propose()
    page = viewer.get(_review(entry))
    assert page.status_code == 200
    assert 'id="confirm-form"' not in page.content.decode()
    for action, data in (
        ("confirm", {"revision": "1"}),
        ("request-changes", {"revision": "1", "comment": "改"}),
        ("cancel", {}),
    ):
        assert viewer.post(_action(entry, action), data).status_code == 403
    assert viewer.get(_action(entry, "cancel")).status_code == 403
    assert not Job.objects.exists() and not ChangeRequest.objects.exists()
    entry_confirm(task_id=str(entry.task_id), revision=1, user=reviewer, now=later(5))
    for action in ("pause", "run-now"):
        assert viewer.post(_action(entry, action)).status_code == 403
    job = Job.objects.get()
    assert job.enabled and not Run.objects.exists()


def test_an_outsider_is_sent_to_the_login_page(propose, client):
    entry = propose()
    response = client.post(_action(entry, "confirm"), {"revision": "1"})
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert client.get(_review(entry)).status_code == 302
    assert not Job.objects.exists()


def test_an_unknown_entry_is_a_404(browser):
    assert browser.get("/admin/plans/entry/999/change/").status_code == 404
    assert browser.get("/admin/plans/entry/999/cancel/").status_code == 404


# --- the job's actions ----------------------------------------------------------------------------


def test_pause_resume_and_run_now(propose, browser, reviewer):
    entry = _confirmed(propose, reviewer)
    response = _post(browser, entry, "pause")
    assert _messages(response) == ["The job is paused; PLAN.md is unchanged."]
    job = Job.objects.get()
    assert not job.enabled and job.next_run_at is None
    assert "xw-status-disabled" in response.content.decode()

    response = _post(browser, entry, "resume")
    assert _messages(response) == ["The job is resumed. Next run: 2026-03-10 09:00:00 CST."]
    assert Job.objects.get().enabled

    response = _post(browser, entry, "run-now")
    assert _messages(response) == ["A run has started; its outcome shows under Runs."]
    run = Run.objects.get()
    assert run.forced and run.status == Run.RUNNING
    assert "xw-status-running" in response.content.decode()
    again = _post(browser, entry, "run-now")
    assert _messages(again) == ["Not run: already-running."]
    assert Run.objects.count() == 1

    assert browser.get(_action(entry, "pause")).status_code == 405


def test_cancel_asks_first_then_writes_cancelled_into_plan_md(
    propose, browser, reviewer, workspace
):
    entry = _confirmed(propose, reviewer)
    question = browser.get(_action(entry, "cancel"))
    assert question.status_code == 200 and 'id="cancel-form"' in question.content.decode()
    assert Job.objects.get().removed_at is None  # asking changed nothing

    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', question.content.decode())
    response = browser.post(
        _action(entry, "cancel"), {"csrfmiddlewaretoken": token.group(1)}, follow=True
    )
    assert _messages(response) == [
        "The plan is cancelled: PLAN.md says Status: Cancelled and the job is off the schedule."
    ]
    entry.refresh_from_db()
    assert entry.state == Entry.REMOVED and Job.objects.get().removed_at is not None
    [item] = parse_plan_file((workspace / "archives" / ARCHIVE_ID / "PLAN.md").read_text())
    assert item.entry.status == "Cancelled"
    assert Revision.objects.get(number=2).written_by == "user:reviewer"  # D-K12
    page = response.content.decode()
    assert 'id="cancel-link"' not in page and 'id="job-actions"' not in page


# --- run history and outputs -----------------------------------------------------------------


def test_the_run_history_lists_outputs_without_following_symlinks(
    propose, browser, reviewer, workspace, tmp_path
):
    entry = _confirmed(propose, reviewer)
    _post(browser, entry, "run-now")
    run = Run.objects.get()
    answer = SimpleNamespace(pk=run.delivery_message_id, last_error="", updated_at=later(6))
    run_record_delivery(answer, "sent", True)

    outputs = workspace / "archives" / ARCHIVE_ID / run.archive_timestamp
    outputs.mkdir(parents=True)
    (outputs / "report.md").write_text("日报", encoding="utf-8")
    (outputs / "charts").mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("x" * 999)
    os.symlink(secret, outputs / "leak.txt")

    page = browser.get(_review(entry)).content.decode()
    history = page.split('id="run-history"', 1)[1].split("</table>", 1)[0]
    assert run.archive_timestamp in history and "delivered" in history
    assert "report.md (6 B)" in history and "charts/" in history
    assert "leak.txt (symlink, not followed)" in history and "999" not in history


def test_outputs_stop_at_the_limit_and_a_symlinked_directory_is_not_entered(workspace, tmp_path):
    stamp = "2026-03-10-09-00-00"
    many = workspace / "archives" / ARCHIVE_ID / stamp
    many.mkdir(parents=True)
    for index in range(MAX_OUTPUTS + 5):
        (many / f"f{index:03d}.txt").write_text("1")
    listed = run_outputs(workspace, ARCHIVE_ID, stamp)
    assert len(listed.files) == MAX_OUTPUTS and listed.more and listed.problem == ""

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "private.txt").write_text("secret")
    os.symlink(elsewhere, workspace / "archives" / ARCHIVE_ID / "2026-03-11-09-00-00")
    followed = run_outputs(workspace, ARCHIVE_ID, "2026-03-11-09-00-00")
    assert followed.files == [] and "symlink" in followed.problem
    assert run_outputs(workspace, ARCHIVE_ID, "2026-03-12-09-00-00").files == []
    assert run_outputs(workspace, "../x", stamp).files == []


def test_a_symlinked_archive_directory_is_not_entered(workspace, tmp_path):
    real = tmp_path / "real-archive"
    (real / "2026-03-10-09-00-00").mkdir(parents=True)
    (real / "2026-03-10-09-00-00" / "x.md").write_text("x")
    (workspace / "archives").mkdir(exist_ok=True)
    os.symlink(real, workspace / "archives" / "linked")
    listed = run_outputs(workspace, "linked", "2026-03-10-09-00-00")
    assert listed.files == [] and listed.problem


# --- Chinese -------------------------------------------------------------------------------------------


def test_the_review_page_is_in_chinese(propose, browser, reviewer):
    entry = _confirmed(propose, reviewer)
    browser.post(
        "/admin/language/",
        {"language": "zh-hans", "next": "/admin/", "csrfmiddlewaretoken": csrf_token(browser, _review(entry))},
    )
    page = browser.get(_review(entry)).content.decode()
    for text in (
        "待执行",
        "下次执行",
        "每天 09:00 (Asia/Shanghai)",
        "暂停",
        "立即执行",
        "执行记录",
    ):
        assert text in page, text
    for english in ("Pause", "Run now", "Who asked for it", "The next 10 fire times"):
        assert english not in page, english
    listing = browser.get(LIST).content.decode()
    assert "待执行" in listing


def test_the_review_page_says_when_the_schedule_could_not_be_computed(propose, browser, reviewer):
    # Issue 23 A3: the job disabled after three ticks that could not compute its schedule.
    from plans.scheduler import scheduler_tick

    entry = _confirmed(propose, reviewer)
    job = Job.objects.get(entry=entry)
    Job.objects.filter(pk=job.pk).update(schedule={**job.schedule, "tz": "Mars/Olympus_Mons"})
    for second in range(3):
        scheduler_tick(now=job.next_run_at + timedelta(seconds=second))
    page = browser.get(_review(entry)).content.decode()
    assert "schedule error: " in page and "disabled: 3 ticks in a row" in page


# --- issue 22: what a newcomer misread ---------------------------------------------------------------


def test_a_recurring_job_whose_last_run_went_well_waits_for_its_next_run(propose, browser, reviewer):
    daily = _confirmed(propose, reviewer)
    Job.objects.filter(entry=daily).update(last_run_status="ok")
    once = _confirmed(propose, reviewer)
    Job.objects.filter(entry=once).update(last_run_status="ok", next_run_at=None)
    page = browser.get(LIST).content.decode()
    rows = {pk: row for row in page.split("</tr>") for pk in (daily.pk, once.pk)
            if f"/{pk}/change/" in row}
    # §6 says "done" after a good run; a daily job with a next run is not done.
    assert "xw-status-pending" in rows[daily.pk] and ">done<" not in rows[daily.pk]
    assert "xw-status-done" in rows[once.pk]


def test_the_runs_list_has_human_column_headers(propose, browser, reviewer):
    entry = _confirmed(propose, reviewer)
    Run.objects.create(job=entry.job, fire_at_ms=1_773_104_400_000, run_id="run-1",
                       revision=entry.revision, status="ok", duration_ms=48_213,
                       delivery_status="delivered", finished_at=later(6))
    page = browser.get("/admin/plans/run/").content.decode()
    assert ">Delivery<" in page and ">Duration<" in page and "48.2 s" in page
    assert "DeliveryStatus" not in page and "DurationMs" not in page


def test_plan_entries_and_plan_files_read_as_different_things():
    with translation.override("en"):
        names = {str(model._meta.verbose_name_plural) for model in (Entry, Revision, Plan)}
    assert names == {"plan entries", "PLAN.md revisions", "PLAN.md files"}


def test_every_time_on_the_review_page_has_its_zone_and_seconds(propose, browser, reviewer):
    entry = _confirmed(propose, reviewer)
    page = browser.get(_review(entry), {"tz": "Asia/Shanghai"}).content.decode()
    # Written at NOW (00:30 UTC), confirmed five minutes later, as the fire times read.
    assert '<dd id="revision-written-at">2026-03-10 08:30:00 CST</dd>' in page
    assert "· 2026-03-10 08:35:00 CST</li>" in page
