"""Every admin page fits a 1280 px screen and a phone, in English and Chinese (issue 22).

One browser, one live server, one data set: each page is visited at both
widths in both languages, screenshotted under tmp_path, and checked in the
page itself that no table is wider than the box it sits in and no cell cuts
its content.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.utils import timezone

from longrun import services as longrun_services
from plans.models import Entry, Job, Run
from plans.services import entry_confirm, plan_propose
from tests.browser.conftest import PHONE, page_width, sign_in
from tests.conftest import configure
from tests.plans.conftest import proposal
from xworkmate.delivery.models import Attempt, Message
from xworkmate.delivery.services import outbox_enqueue
from xworkmate.services import api_key_create

DESKTOP = {"width": 1280, "height": 900}
SESSION = "agent:ops:user:u-1:direct:chat-1"

# The layout checks, run in the page. A table may be wider than its wrapping
# element only at phone width and only when that element scrolls sideways by
# design (Django's changelist puts its results in `.results { overflow-x: auto }`,
# the review and task pages put theirs in `.xw-scroll`): there the person
# scrolls the table, not the page, and nothing is cut. At 1280 px nothing may
# scroll: the outbox's status column was hidden past the box's edge there.
# A cell may be narrower than its content only when it says so (an ellipsis)
# and gives the whole text in a title attribute. At 1280 px a cell's text
# wrapped into lines of a character or two (the Chinese task names) counts as
# cut too; at phone width the tables are as narrow as their scrolling box lets
# them be, and that check is left to the desktop.
LAYOUT_PROBLEMS = r"""(phone) => {
  const problems = [];
  const label = (el) => (el.id ? '#' + el.id : el.tagName.toLowerCase() +
      (el.className && typeof el.className === 'string' ? '.' + el.className.split(' ').join('.') : ''));
  for (const table of document.querySelectorAll('table')) {
    const box = table.parentElement;
    const scrolls = ['auto', 'scroll'].includes(getComputedStyle(box).overflowX);
    if (box.scrollWidth > box.clientWidth + 1 && !(phone && scrolls)) {
      problems.push(`table in ${label(box)} is ${box.scrollWidth}px wide in ${box.clientWidth}px`);
    }
    for (const cell of table.querySelectorAll('td, th')) {
      const text = cell.innerText.trim();
      const clipped = [cell, ...cell.querySelectorAll('*')].some(
        (el) => el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== 'visible'
          && !(getComputedStyle(el).textOverflow === 'ellipsis' && el.closest('[title]')));
      if (cell.scrollWidth > cell.clientWidth + 1 || clipped) {
        problems.push(`cell "${text.slice(0, 40)}" is clipped (${cell.scrollWidth}px in ${cell.clientWidth}px)`);
      }
      // Lines of text, counted from the text itself (not from the boxes of the
      // links and divs a header cell holds).
      const tops = new Set();
      const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        if (!node.textContent.trim()) continue;
        const range = document.createRange();
        range.selectNodeContents(node);
        for (const rect of range.getClientRects()) if (rect.width) tops.add(Math.round(rect.top));
      }
      const lines = tops.size;
      const longest = Math.max(0, ...text.split(/\s+/).map((word) => word.length));
      if (!phone && lines > 1 && longest >= 6 && text.length / lines < 4) {
        problems.push(`cell "${text.slice(0, 40)}" wraps into ${lines} lines of ${Math.round(text.length / lines)} characters`);
      }
    }
  }
  // A long title's text (the page's h1, or the object's name in the h2 below it)
  // must not run under the object tools (the History button); the heading's box
  // is the page's width, its lines are what a person reads.
  for (const title of document.querySelectorAll('#content > h1, #content > h2')) {
    const range = document.createRange();
    range.selectNodeContents(title);
    const lines = [...range.getClientRects()];
    for (const tool of document.querySelectorAll('.object-tools a')) {
      const b = tool.getBoundingClientRect();
      if (lines.some((a) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom)) {
        problems.push(`the title "${title.innerText.slice(0, 40)}" overlaps "${tool.innerText}"`);
      }
    }
  }
  return problems;
}"""


def _data(tmp_path: Path, settings: Any, user: User) -> dict[str, str]:
    """A little of everything, with the long names and keys that broke the layout."""
    now = timezone.now()
    configure(settings, "plans", workspace=str(tmp_path / "workspace"))
    (tmp_path / "workspace").mkdir()
    long_name = "每日库存巡检日报并汇总到采购群"
    waiting = plan_propose(session_key=SESSION, proposal=proposal(task_name="待确认的月度盘点计划"),
                           turn_id="turn-1", written_by="test", now=now)
    confirmed = plan_propose(session_key=SESSION, proposal=proposal(task_name=long_name),
                             turn_id="turn-2", written_by="test", now=now)
    entry_confirm(task_id=str(confirmed.task_id), revision=confirmed.revision.number, user=user,
                  now=now)
    job = Job.objects.get(entry=confirmed)
    job.last_run_status = "ok"
    job.save(update_fields=["last_run_status"])
    Run.objects.create(job=job, fire_at_ms=int(now.timestamp() * 1000) - 86_400_000,
                       run_id="run-" + "9f3c2a" * 6, revision=confirmed.revision, status="ok",
                       duration_ms=48_213, delivered=True, delivery_status="delivered",
                       archive_timestamp="2026-03-09_09-00-00", finished_at=now)
    # The timeline's other rows: a fire time missed, with its reason (issue 23 C1).
    Run.objects.create(job=job, fire_at_ms=int(now.timestamp() * 1000) - 2 * 86_400_000,
                       run_id="run-" + "7a1b" * 9, revision=confirmed.revision, status="missed",
                       error="missed: the scheduler was not running at this fire time",
                       finished_at=now)

    register: dict[str, Any] = {"goal": "确认表结构", "done_when": "迁移完成", "blocked_when": "缺权限",
                "boundary": "数据库", "note": "读取迁移日志", "by": "agent"}
    longrun_services.task_set(
        name="迁移订单数据库并核对每张表的行数", session="迁移会话", state="executing",
        origin_session_key="agent:main:feishu:group:oc_5f1d2e3c4b5a69788796a5b4c3d2e1f0",
        next_check="等CI", now=now - timedelta(minutes=20), **register)
    longrun_services.task_progress_record(
        name="迁移订单数据库并核对每张表的行数", outcome="failed",
        error="gateway 502: upstream connect error or disconnect/reset before headers",
        by="agent", now=now - timedelta(minutes=5))
    longrun_services.task_set(name="整理日志", session="整理会话", state="executing",
                              origin_session_key="agent:main:b", next_check="30m", now=now,
                              **register)

    failed = outbox_enqueue(
        purpose="longrun.progress",
        # A session key longer than a line: the message's page is titled by it.
        target="agent:main:feishu:group:oc_5f1d2e3c4b5a69788796a5b4c3d2e1f0:thread:om_"
               + "0123456789abcdef" * 8,
        body="正在看：日志", idempotency_key="longrun:progress:" + "7e" * 30, now=now)
    Message.objects.filter(pk=failed.pk).update(
        status=Message.FAILED, attempt_count=1,
        last_error="HTTP 500 from https://hooks.example.com/xworkmate/progress: " + "x" * 120)
    Attempt.objects.create(message=failed, number=1, channel=failed.channel, started_at=now,
                           finished_at=now, outcome="failed", detail="HTTP 500 " + "y" * 200)
    outbox_enqueue(purpose="longrun.progress", target="agent:main:b", body="进度",
                   idempotency_key="k-2", now=now)
    # Named by a key just short enough for one line: the line reaches the History button.
    one_line = outbox_enqueue(purpose="longrun.progress",
                              target="agent:main:feishu:group:oc_" + "5f1d2e3c4b" * 6,
                              body="进度", idempotency_key="k-3", now=now)
    api_key_create(name="bridge", scopes=["plans:write", "gateway:write"], created_by=user)
    return {
        "index": "/admin/",
        "plans": "/admin/plans/entry/",
        "review": f"/admin/plans/entry/{confirmed.pk}/change/",
        "awaiting-review": f"/admin/plans/entry/{waiting.pk}/change/",
        "timeline": f"/admin/plans/entry/{confirmed.pk}/timeline/",
        "plan-files": "/admin/plans/plan/",
        "runs": "/admin/plans/run/",
        "board": "/admin/longrun/longtask/",
        "outbox": "/admin/delivery/message/",
        "message": f"/admin/delivery/message/{failed.pk}/change/",
        "message-one-line": f"/admin/delivery/message/{one_line.pk}/change/",
        "api-keys": "/admin/xworkmate/apikey/",
        "preview": "/admin/plans/schedule-preview/?kind=cron&expr=0+9+*+*+1-5&tz=Asia%2FShanghai"
                   "&count=5",
    }


def test_every_admin_page_fits_both_widths_in_both_languages(
    live_server, page, transactional_db, settings, tmp_path: Path, caplog
):
    user = User.objects.create_superuser("fay", "", "fay-pw-2026")
    pages = _data(tmp_path, settings, user)
    assert Entry.objects.count() == 2
    sign_in(page, live_server.url, "fay", "fay-pw-2026")

    problems: list[str] = []
    for language in ("en", "zh-hans"):
        if language != "en":
            page.goto(f"{live_server.url}/admin/")
            page.select_option("#xworkmate-language-select", language)
            page.click("#xworkmate-language input[type=submit]")
            page.locator("text=界面语言").wait_for()
        for name, path in pages.items():
            page.set_viewport_size(DESKTOP)
            response = page.goto(f"{live_server.url}{path}")
            assert response is not None and response.status == 200, (name, language)
            for width, viewport in (("1280", DESKTOP), ("390", PHONE)):
                page.set_viewport_size(viewport)
                page.screenshot(path=str(tmp_path / f"{name}-{language}-{width}.png"),
                                full_page=True)
                phone = viewport is PHONE
                found = page.evaluate(LAYOUT_PROBLEMS, phone)
                if phone and page_width(page) > PHONE["width"]:
                    found.append(f"the page is {page_width(page)}px wide")
                problems += [f"{name} {language} {width}px: {one}" for one in found]
    # Chromium asks for /favicon.ico unless the page names an icon (Playwright does not
    # report that request; the server's log of its 404 does).
    assert [r.getMessage() for r in caplog.records if "favicon" in r.getMessage()] == []
    assert not problems, "\n".join(problems)
