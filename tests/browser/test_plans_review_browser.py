"""An agent proposes a plan over the API; a person reviews it in the admin and confirms it."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User

from tests.browser.conftest import PHONE, page_width, sign_in
from tests.conftest import ROOT, configure
from xworkmate.services import api_key_create

ARTIFACTS = ROOT / "tests" / "artifacts"
SESSION = "agent:ops:user:u-1:direct:chat-1"


def _api(base: str, token: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{base}{path}",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        answer: dict[str, Any] = json.loads(response.read())
    return answer


def test_it_reviews_and_confirms_a_proposed_plan_also_at_phone_width(
    live_server, page, transactional_db, settings, tmp_path: Path
):
    configure(settings, "plans", workspace=str(tmp_path))
    _, token = api_key_create(name="bridge", scopes=["plans:write"])
    proposed = _api(
        live_server.url,
        token,
        "/api/plans/propose",
        {
            "sessionKey": SESSION,
            "turnId": "turn-1",
            "taskName": "每日库存巡检日报",
            "persona": "库存管理助理",
            "objective": "每天发现库存异常",
            "result": "每天 9 点前生成日报",
            "steps": ["每天 09:00 读取库存表并生成日报；失败时记录原因并重试一次"],
            "schedule": {"kind": "cron", "expr": "0 9 * * *", "tz": "Asia/Shanghai"},
        },
    )["plan"]
    # The user asked for a change: revision 2 is what the person reviews.
    revised = _api(
        live_server.url,
        token,
        f"/api/plans/{proposed['taskId']}/revise",
        {"turnId": "turn-2", "objective": "每天发现库存异常并提醒采购"},
    )["plan"]
    assert revised["revision"]["number"] == 2

    User.objects.create_superuser("erin", "", "erin-pw-2026")
    sign_in(page, live_server.url, "erin", "erin-pw-2026")
    page.goto(revised["reviewUrl"])

    diff = page.locator("#plan-diff").inner_text()
    assert "-- **Objective**: 每天发现库存异常" in diff
    assert "+- **Objective**: 每天发现库存异常并提醒采购" in diff
    rows = page.locator("#fire-times tbody tr")
    assert rows.count() == 10
    assert "09:00:00 CST" in rows.first.inner_text()
    assert (
        "Every day at 09:00 (Asia/Shanghai)" in page.locator("#schedule-description").inner_text()
    )
    assert '"sessionTarget": "isolated"' in page.locator("#proposed-job").inner_text()

    page.set_viewport_size(PHONE)
    assert page_width(page) <= PHONE["width"]
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "plans-review.png"), full_page=True)

    page.click("#confirm-form input[type=submit]")
    message = page.locator(".messagelist").inner_text()
    assert "Revision 2 is confirmed" in message
    assert "09:00:00 CST" in page.locator("#job-next-run").inner_text()
    assert page.locator("#plan-job-status").inner_text() == "pending"
    assert page.locator("#confirm-form").count() == 0
    assert page_width(page) <= PHONE["width"]
    page.screenshot(path=str(ARTIFACTS / "plans-review-confirmed.png"), full_page=True)

    listing = f"{live_server.url}/admin/plans/entry/"
    page.goto(listing)
    assert "pending" in page.locator("#result_list").inner_text()
