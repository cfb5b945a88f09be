"""The long-task board and a task's page: overdue first, delivery failures, and the end actions."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import time_machine
from django.contrib.auth.models import Permission, User
from django.test import Client

from longrun import services
from longrun.models import LongTask, SessionLock, Transition
from tests.conftest import csrf_token
from tests.longrun.conftest import K2, K, at, push_channels, task_set

pytestmark = pytest.mark.django_db

BOARD = "/admin/longrun/longtask/"


def _page(task: LongTask) -> str:
    return f"/admin/longrun/longtask/{task.pk}/change/"


@pytest.fixture(autouse=True)
def clock() -> Iterator[None]:
    """Twelve minutes after the tasks' registration at T0: some are overdue by now."""
    with time_machine.travel(at(minutes=12), tick=False):
        yield


@pytest.fixture
def browser(db: None) -> Client:
    """A superuser whose posts must carry the CSRF token, as a browser's do."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(User.objects.create_superuser("ops", "", "pw-ops-2026"))
    return client


@pytest.fixture
def viewer(db: None) -> Client:
    """Staff who may look at long tasks but not change them."""
    user = User.objects.create_user("viewer", password="pw-viewer-1", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_longtask"))
    client = Client()
    client.force_login(user)
    return client


def _rows(page: str) -> dict[str, str]:
    """The board's rows by task name, in their order."""
    body = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    rows = {}
    for row in body.split("</tr>")[:-1]:
        name = re.search(r'<a href="/admin/longrun/longtask/\d+/change/[^"]*">([^<]+)</a>', row)
        assert name, row
        rows[name.group(1)] = row
    return rows


def _mark(client: Client, task: LongTask, state: str, **data: Any) -> Any:
    data["csrfmiddlewaretoken"] = csrf_token(client, _page(task))
    return client.post(f"/admin/longrun/longtask/{task.pk}/mark-{state}/", data, follow=True)


@pytest.fixture
def tasks() -> dict[str, LongTask]:
    """A stale executing task, a recently active one that owes progress, a waiting one, a done one."""
    task_set("stale", key=K, next_check="等CI")
    task_set("fresh", key=K2, next_check="1h", now=at(minutes=9))
    task_set("waiting", key="agent:main:other", state="waiting", next_check="30m", now=at(minutes=5))
    task_set("finished", key=None, state="done", now=at(minutes=1))
    return {task.name: task for task in LongTask.objects.all()}


def test_the_board_lists_overdue_tasks_first_with_their_reasons(browser, tasks):
    page = browser.get(BOARD).content.decode()
    rows = _rows(page)
    assert list(rows) == ["stale", "fresh", "waiting", "finished"]
    assert "stale_update (10m)" in rows["stale"] and "overdue" in rows["stale"]
    assert "progress_due (3m)" in rows["fresh"] and "progress due" in rows["fresh"]
    assert "xw-overdue" not in rows["waiting"] and "xw-overdue" not in rows["finished"]
    assert "12\xa0minutes ago" in rows["stale"]  # since its last visible progress
    assert "2026-04-02 12:35:00 CST" in rows["waiting"]  # its checkpoint, in longrun.time_zone
    assert "等CI" in rows["stale"]  # a checkpoint that names no time is shown as written
    assert '<meta http-equiv="refresh" content="30">' in page


def test_the_board_filters_by_state_and_hides_archived_tasks(browser, tasks):
    rows = _rows(browser.get(BOARD, {"state__exact": "waiting"}).content.decode())
    assert list(rows) == ["waiting"]
    LongTask.objects.filter(name="finished").update(archived_at=at(minutes=11))
    assert "finished" not in _rows(browser.get(BOARD).content.decode())
    archived = _rows(browser.get(BOARD, {"stored": "archived"}).content.decode())
    assert list(archived) == ["finished"]


def test_the_board_and_page_show_delivery_failures_with_times_and_reasons(browser, tasks, settings):
    push_channels(settings)
    for minute in (1, 2):
        services.task_progress_record(
            name="fresh", outcome="failed", error=f"gateway 50{minute}", by="agent",
            now=at(minutes=9, seconds=minute),
        )
    row = _rows(browser.get(BOARD).content.decode())["fresh"]
    assert "failed 2026-04-02 12:09:02 CST" in row and "gateway 502" in row
    assert "2 undelivered in a row" in row
    page = browser.get(_page(tasks["fresh"])).content.decode()
    log = page.split('id="event-history"', 1)[1].split("</table>", 1)[0]
    assert log.count("gateway 50") == 2 and "2026-04-02 12:09:01 CST" in log


def test_the_page_shows_transitions_and_the_tasks_outbox_messages(browser, tasks, settings):
    push_channels(settings)
    queued = services.watchdog_run_once(now=at(minutes=12))
    assert queued.body["payloads"]
    task_set("stale", key=K, state="blocked", note="缺权限", now=at(minutes=12))
    page = browser.get(_page(tasks["stale"])).content.decode()
    transitions = page.split('id="transition-history"', 1)[1].split("</table>", 1)[0]
    assert "executing" in transitions and "blocked" in transitions and "test" in transitions
    outbox = page.split('id="outbox-history"', 1)[1].split("</table>", 1)[0]
    assert "longrun.recovery" in outbox and "/admin/delivery/message/" in outbox
    forms = re.findall(r'id="mark-([a-z]+)-form"', page)
    assert forms == ["handoff", "done"]  # it is blocked already


def test_marking_done_with_a_note_calls_the_service(browser, tasks):
    task = tasks["stale"]
    response = _mark(browser, task, "done", note="用户确认已完成")
    assert response.redirect_chain[-1][0] == _page(task)
    task.refresh_from_db()
    assert task.state == "done" and task.note == "读取迁移日志"  # the agent's next step stays
    assert not SessionLock.objects.filter(task=task).exists()
    last = Transition.objects.filter(task=task).latest("at", "id")
    assert (last.from_state, last.to_state, last.by, last.note) == (
        "executing", "done", "user:ops", "用户确认已完成",
    )
    assert "The task is now done." in response.content.decode()
    assert 'id="task-actions"' not in response.content.decode()  # leaving done is the agent's


def test_a_mark_without_a_note_is_refused_and_changes_nothing(browser, tasks):
    task = tasks["stale"]
    response = _mark(browser, task, "blocked", note="  ")
    assert "Invalid note: required: say why" in response.content.decode()  # capitalised
    task.refresh_from_db()
    assert task.state == "executing" and SessionLock.objects.filter(task=task).exists()


def test_marks_need_csrf_post_and_the_change_permission(browser, viewer, tasks):
    task = tasks["stale"]
    mark = f"/admin/longrun/longtask/{task.pk}/mark-handoff/"
    assert browser.post(mark, {"note": "x"}).status_code == 403  # no CSRF token
    assert browser.get(mark).status_code == 405
    assert viewer.get(_page(task)).status_code == 200
    assert 'id="task-actions"' not in viewer.get(_page(task)).content.decode()
    assert viewer.post(mark, {"note": "x"}).status_code == 403
    assert Client().get(_page(task)).status_code == 302  # to the login page
    task.refresh_from_db()
    assert task.state == "executing"
    assert browser.get("/admin/longrun/longtask/999999/change/").status_code == 404


def test_the_model_pages_are_read_only(browser, tasks):
    assert browser.get("/admin/longrun/longtask/add/").status_code == 403
    task = tasks["stale"]
    assert browser.post(_page(task), {"state": "done"}).status_code in (403, 405)
    assert browser.get(f"/admin/longrun/longtask/{task.pk}/delete/").status_code == 403


def test_the_board_and_page_in_chinese(browser, tasks):
    browser.cookies["django_language"] = "zh-hans"
    board = browser.get(BOARD).content.decode()
    for label in ("长任务", "需要关注", "距上次可见进度", "下次检查", "投递", "续跑次数"):
        assert label in board, label
    assert "已超时" in _rows(board)["stale"] and "该汇报进度" in _rows(board)["fresh"]
    page = browser.get(_page(tasks["stale"])).content.decode()
    for label in ("状态变更", "任务日志", "为此任务发出的消息", "标记为已完成"):
        assert label in page, label


def test_the_landing_page_links_the_board(browser, tasks):
    landing = browser.get("/admin/").content.decode()
    assert f'href="{BOARD}"' in landing


def test_the_stored_filter_offers_three_distinct_choices(browser, tasks):
    # Issue 22: the admin's own default, "All", sat next to this filter's "all".
    response = browser.get(BOARD)
    changelist = response.context["cl"]
    [stored] = [spec for spec in changelist.filter_specs
                if getattr(spec, "parameter_name", "") == "stored"]
    labels = [str(choice["display"]) for choice in stored.choices(changelist)]
    assert labels == ["stored", "archived", "stored and archived"]
