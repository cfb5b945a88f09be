"""A person signs in, switches the language, creates an API key, and the key works."""

from __future__ import annotations

import json
import re
import urllib.request

from django.contrib.auth.models import User


def test_it_signs_in_switches_language_and_creates_a_working_key(
    live_server, page, test_methods, transactional_db, tmp_path
):
    User.objects.create_superuser("carol", "", "carol-pw-2026")
    page.goto(f"{live_server.url}/admin/")
    page.fill("#id_username", "carol")
    page.fill("#id_password", "carol-pw-2026")
    page.click("input[type=submit]")

    landing = page.locator("#xworkmate-landing")
    landing.wait_for()
    assert "Health" in landing.inner_text()
    assert page.locator("a[href='/api/docs/']").count() == 1

    page.select_option("#xworkmate-language-select", "zh-hans")
    page.click("#xworkmate-language input[type=submit]")
    page.locator("text=界面语言").wait_for()
    assert "概览" in page.content()
    page.screenshot(path=str(tmp_path / "landing-zh.png"))

    page.goto(f"{live_server.url}/admin/xworkmate/apikey/add/")
    page.fill("#id_name", "browser-bridge")
    page.check("input[value='gateway:write']")
    page.click("input[name=_save]")
    message = page.locator(".messagelist").inner_text()
    token = re.search(r"xwm_[A-Za-z0-9_-]{40,}", message).group(0)

    request = urllib.request.Request(
        f"{live_server.url}/gateway/test.echo.write",
        data=json.dumps({"hello": "bridge"}).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        body = json.loads(response.read())
    assert body == {
        "ok": True,
        "payload": {"method": "test.echo.write", "params": {"hello": "bridge"}, "key": "browser-bridge"},
    }

    # The language choice follows the user, not the browser: a new session
    # of the same user still gets Chinese.
    page.context.clear_cookies()
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", "carol")
    page.fill("#id_password", "carol-pw-2026")
    page.click("input[type=submit]")
    page.locator("#xworkmate-landing").wait_for()
    assert "界面语言" in page.content()
