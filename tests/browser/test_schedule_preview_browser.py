"""A person previews a schedule in the admin, in both languages."""

from __future__ import annotations

from django.contrib.auth.models import User

from tests.browser.conftest import sign_in


def test_it_previews_a_schedule_from_the_landing_page(live_server, page, transactional_db, tmp_path):
    User.objects.create_superuser("dana", "", "dana-pw-2026")
    sign_in(page, live_server.url, "dana", "dana-pw-2026")
    page.click("a[href='/admin/plans/schedule-preview/']")
    page.select_option("#id_kind", "cron")
    page.fill("#id_expr", "30 2 * * 1-5")
    page.fill("#id_tz", "America/New_York")
    page.fill("#id_count", "5")
    page.click("#schedule-preview-form input[type=submit]")
    description = page.locator("#schedule-description").inner_text()
    assert "02:30" in description and "America/New_York" in description
    rows = page.locator("#schedule-runs tbody tr")
    assert rows.count() == 5
    assert "EST" in rows.first.inner_text() or "EDT" in rows.first.inner_text()
    page.screenshot(path=str(tmp_path / "preview.png"))

    page.fill("#id_expr", "61 * * * *")
    page.click("#schedule-preview-form input[type=submit]")
    assert page.locator("#schedule-error").inner_text() == "CronPattern: Invalid value for minute: 61"

    page.goto(f"{live_server.url}/admin/")
    page.select_option("#xworkmate-language-select", "zh-hans")
    page.click("#xworkmate-language input[type=submit]")
    page.goto(f"{live_server.url}/admin/plans/schedule-preview/?kind=cron&expr=30+2+*+*+*"
              "&tz=Asia%2FShanghai&count=3")
    assert page.locator("#schedule-description").inner_text() == "每天 02:30 (Asia/Shanghai)"
