"""A person watches the long-task board in the admin, opens a task and ends its run."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.models import User
from django.utils import timezone

from longrun import services
from longrun.models import LongTask, Transition
from tests.browser.conftest import PHONE, page_width, sign_in

REGISTER = {
    "session": "迁移会话",
    "goal": "确认表结构",
    "done_when": "迁移完成",
    "blocked_when": "缺权限",
    "boundary": "数据库",
    "note": "读取迁移日志",
    "by": "agent",
}


def test_it_shows_the_board_overdue_first_and_ends_a_run_from_the_task_page(
    live_server, page, transactional_db, tmp_path
):
    now = timezone.now()
    # Registered 20 minutes ago and silent since: overdue. The other one just now.
    services.task_set(name="迁移数据库", state="executing", origin_session_key="agent:main:a",
                      next_check="等CI", now=now - timedelta(minutes=20), **REGISTER)
    services.task_set(name="整理日志", state="executing", origin_session_key="agent:main:b",
                      next_check="30m", now=now, **REGISTER)
    services.task_progress_record(name="迁移数据库", outcome="failed", error="gateway 502",
                                  by="agent", now=now - timedelta(minutes=5))
    User.objects.create_superuser("olga", "", "olga-pw-2026")
    sign_in(page, live_server.url, "olga", "olga-pw-2026")

    page.click("a[href='/admin/longrun/longtask/']")
    page.locator("#longrun-board-note").wait_for()
    rows = page.locator("#result_list tbody tr")
    assert rows.count() == 2
    first = rows.nth(0).inner_text()
    assert "迁移数据库" in first and "overdue" in first and "stale_update (10m)" in first
    assert "gateway 502" in first and "20\xa0minutes ago" in first
    assert "整理日志" in rows.nth(1).inner_text()
    refresh = page.locator("meta[http-equiv=refresh]").get_attribute("content")
    assert refresh == "30"
    page.screenshot(path=str(tmp_path / "board.png"))

    page.click("#result_list >> text=迁移数据库")
    page.locator("#longrun-task").wait_for()
    assert "stale_update (10m)" in page.locator("#task-attention").inner_text()
    assert "gateway 502" in page.locator("#event-history").inner_text()
    assert page.locator("#task-locks").inner_text() == "agent:main:a"

    page.set_viewport_size(PHONE)
    assert page_width(page) <= PHONE["width"]
    page.fill("#mark-blocked-note", "缺数据库权限，已请用户授权")
    page.click("#mark-blocked-form input[type=submit]")
    page.locator(".messagelist").wait_for()
    assert "blocked" in page.locator("#task-state").inner_text()
    assert "缺数据库权限" in page.locator("#transition-history").inner_text()
    page.screenshot(path=str(tmp_path / "task.png"))
    task = LongTask.objects.get(name="迁移数据库")
    assert task.state == "blocked" and not task.locks.exists()
    assert Transition.objects.filter(task=task, to_state="blocked", by="user:olga").exists()

    # In Chinese.
    page.goto(f"{live_server.url}/admin/")
    page.select_option("#xworkmate-language-select", "zh-hans")
    page.click("#xworkmate-language input[type=submit]")
    page.goto(f"{live_server.url}/admin/longrun/longtask/")
    assert "距上次可见进度" in page.locator("#result_list thead").inner_text()
