"""The admin's side of issue 23 C4 and C1: what a confirmation binds, expiry, the timeline page."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import time_machine
from django.contrib.auth.models import Permission, User
from django.test import Client

from plans.models import Confirmation, Entry, Job, Run
from plans.scheduler import scheduler_tick
from plans.services import entry_confirm, entry_revise
from plans.timeline import plan_timeline
from plans.wire import entry_sha256_of
from tests.conftest import csrf_token
from tests.plans.conftest import ARCHIVE_ID, NOW, later

pytestmark = pytest.mark.django_db

FIRST_FIRE = NOW + timedelta(minutes=30)  # 09:00 in Shanghai


@pytest.fixture(autouse=True)
def clock() -> Iterator[None]:
    with time_machine.travel(later(5), tick=False):
        yield


def _review(entry: Entry) -> str:
    return f"/admin/plans/entry/{entry.pk}/change/"


def _timeline(entry: Entry) -> str:
    return f"/admin/plans/entry/{entry.pk}/timeline/"


def _chinese(client: Client, entry: Entry) -> None:
    client.post("/admin/language/", {"language": "zh-hans", "next": "/admin/",
                                     "csrfmiddlewaretoken": csrf_token(client, _review(entry))})


# --- the review page: what a confirmation binds, and until when -------------------------------


def test_the_review_page_shows_the_hash_and_schedule_a_confirmation_would_bind(propose, browser):
    entry = propose()
    page = browser.get(_review(entry)).content.decode()
    full = entry_sha256_of(entry)
    # The entry's own text, not the whole PLAN.md revision's.
    assert full and full != Entry.objects.get().revision.sha256
    assert (f'<code id="approval-pending-hash" title="{full}">{full[:12]}…</code>') in page
    schedule = re.search(r'<code id="approval-pending-schedule">([^<]+)</code>', page)
    assert schedule is not None
    shown = json.loads(schedule.group(1).replace("&quot;", '"'))
    assert shown["kind"] == "cron" and shown["expr"] == "0 9 * * *"
    assert shown["tz"] == "Asia/Shanghai"
    assert ('id="approval-expires">Revision 1 can be confirmed until 2026-03-17 08:30:00 CST '
            "(168h after it was recorded); then it expires.") in page
    assert 'id="confirm-form"' in page

    entry_confirm(task_id=str(entry.task_id), revision=1, user=User.objects.get(), now=later(5))
    page = browser.get(_review(entry)).content.decode()
    bound = Confirmation.objects.get()
    assert bound.entry_sha256 == full
    assert f'<code id="approval-confirmed-hash" title="{full}">{full[:12]}…</code>' in page
    confirmed = re.search(r'<code id="approval-confirmed-schedule">([^<]+)</code>', page)
    assert confirmed is not None
    assert json.loads(confirmed.group(1).replace("&quot;", '"')) == Job.objects.get().schedule
    assert 'id="approval-pending"' not in page and 'id="approval-differs"' not in page
    # The confirmations' list names the hash too.
    assert f'SHA-256 <code title="{full}">{full[:12]}…</code> · 2026-03-10 08:35:00 CST</li>' in page
    assert f'href="{_timeline(entry)}" id="timeline-link"' in page


def test_the_review_page_says_when_the_newest_text_is_not_the_confirmed_one(
    propose, browser, reviewer
):
    entry = propose()
    entry_confirm(task_id=str(entry.task_id), revision=1, user=reviewer, now=later(5))
    entry_revise(task_id=str(entry.task_id), changes={"objective": "改成每小时巡检"},
                 turn_id="turn-3", written_by="test", now=later(5))
    page = browser.get(_review(entry)).content.decode()
    assert 'id="approval-differs"' in page and 'id="approval-pending-hash"' in page
    assert "each run carries the confirmed text" in page


def test_an_expired_revision_says_so_and_the_admin_refuses_to_confirm_it(propose, browser):
    entry = propose()
    with time_machine.travel(NOW + timedelta(days=7, seconds=5), tick=False):
        scheduler_tick(now=NOW + timedelta(days=7, seconds=5))
        page = browser.get(_review(entry)).content.decode()
        assert ('id="approval-expired">Revision 1 waited for a confirmation longer than 168h '
                "and expired at 2026-03-17 08:30:00 CST. It can no longer be confirmed; the "
                "agent must propose it again.") in page
        assert 'id="confirm-form"' not in page and 'id="request-changes-form"' not in page
        assert "confirmation expired" in page  # the state, in words
        # A page left open before it expired still posts: the service refuses, naming the rule.
        token = csrf_token(browser, _review(entry))
        answer = browser.post(f"/admin/plans/entry/{entry.pk}/confirm/",
                              {"revision": "1", "csrfmiddlewaretoken": token}, follow=True)
    [message] = [str(m) for m in answer.context["messages"]]
    assert message.startswith("D-C25: revision 1 waited for a confirmation longer than ")
    assert not Job.objects.exists() and not Confirmation.objects.exists()
    assert Entry.objects.get().state == Entry.EXPIRED


def test_the_expired_review_page_is_in_chinese(propose, browser):
    entry = propose()
    with time_machine.travel(NOW + timedelta(days=8), tick=False):
        scheduler_tick(now=NOW + timedelta(days=8))
        _chinese(browser, entry)
        page = browser.get(_review(entry)).content.decode()
    assert "确认所约束的内容" in page and "已过期" in page and "必须重新提出" in page
    assert "can no longer be confirmed" not in page


# --- the timeline page (C1) ---------------------------------------------------------------------


@pytest.fixture
def history(propose, reviewer, workspace: Path) -> Entry:
    """Confirmed, down for two days (two missed, the newest runs), a run with outputs."""
    entry: Entry = propose()
    entry_confirm(task_id=str(entry.task_id), revision=1, user=reviewer, now=later(5))
    scheduler_tick(now=FIRST_FIRE + timedelta(days=2, seconds=5))
    run = Run.objects.get(status=Run.RUNNING)
    out = workspace / "archives" / ARCHIVE_ID / run.archive_timestamp
    out.mkdir(parents=True)
    (out / "日报.md").write_text("# 日报\n", encoding="utf-8")
    Run.objects.filter(pk=run.pk).update(
        status=Run.OK, delivered=True, delivery_status="delivered",
        finished_at=FIRST_FIRE + timedelta(days=2, seconds=9), duration_ms=4000,
    )
    return entry


def test_the_timeline_page_shows_every_event_in_order_with_reasons_and_outputs(
    history, browser
):
    page = browser.get(_timeline(history)).content.decode()
    kinds = re.findall(r'data-kind="([a-z-]+)"(?: data-outcome="([a-z]+)")?', page)
    assert kinds == [("revision", ""), ("confirmation", ""), ("fire", "missed"),
                     ("fire", "missed"), ("fire", "ran")]
    bound = Confirmation.objects.get()
    assert f'<code title="{bound.entry_sha256}">{bound.entry_sha256[:12]}…</code>' in page
    assert "Revision 1 confirmed" in page and "Revision 1 recorded" in page
    assert page.count("missed: the scheduler was not running at this fire time") == 2
    assert "2026-03-10 09:00:00 CST" in page and "2026-03-12 09:00:00 CST" in page
    assert "<td>delivered</td>" in page
    assert "日报.md (9 B)" in page
    assert f'href="/admin/plans/entry/{history.pk}/timeline.json"' in page
    assert f'href="{_review(history)}"' in page
    assert 'id="timeline-paused"' not in page

    Job.objects.filter(entry=history).update(enabled=False, next_run_at=None)
    assert 'id="timeline-paused"' in browser.get(_timeline(history)).content.decode()


def test_the_timeline_downloads_the_apis_json(history, browser):
    answer = browser.get(f"/admin/plans/entry/{history.pk}/timeline.json")
    assert answer.status_code == 200 and answer["Content-Type"] == "application/json"
    assert answer["Content-Disposition"] == (
        f'attachment; filename="plan-{history.task_id}-timeline.json"'
    )
    body = json.loads(answer.content)
    assert body == json.loads(json.dumps(plan_timeline(history, Job.objects.get(), now=later(5), limit=1000)))
    assert [e["kind"] for e in body["events"]][:2] == ["revision", "confirmation"]


def test_the_timeline_page_is_in_chinese(history, browser):
    _chinese(browser, history)
    page = browser.get(_timeline(history)).content.decode()
    for text in ("时间线", "下载 JSON", "已错过", "已执行", "修订版本 1 已确认"):
        assert text in page, text
    for english in ("Download JSON", "Revision 1 confirmed", "Back to the review page"):
        assert english not in page, english


def test_the_timeline_is_for_whoever_may_view_the_plan_and_only_read(history, browser):
    viewer_user = User.objects.create_user("viewer", password="pw-viewer-1", is_staff=True)
    viewer_user.user_permissions.add(Permission.objects.get(codename="view_entry"))
    viewer = Client()
    viewer.force_login(viewer_user)
    assert viewer.get(_timeline(history)).status_code == 200
    assert viewer.get(f"/admin/plans/entry/{history.pk}/timeline.json").status_code == 200
    nobody_user = User.objects.create_user("nobody", password="pw-nobody-1", is_staff=True)
    nobody = Client()
    nobody.force_login(nobody_user)
    assert nobody.get(_timeline(history)).status_code == 403
    anonymous = Client().get(_timeline(history))
    assert anonymous.status_code == 302 and "/admin/login/" in anonymous["Location"]
    token = csrf_token(browser, _review(history))
    assert browser.post(_timeline(history), {"csrfmiddlewaretoken": token}).status_code == 405
    assert browser.get("/admin/plans/entry/999999/timeline/").status_code == 404
    # From the PLAN.md file's page too.
    plan_page = browser.get(f"/admin/plans/plan/{history.plan_id}/change/").content.decode()
    assert f'href="{_timeline(history)}"' in plan_page
