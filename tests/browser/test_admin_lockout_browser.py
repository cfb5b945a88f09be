"""A person mistypes the admin password too often, is locked out, and an operator unlocks (D-K14)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.management import call_command

from tests.browser.conftest import PHONE, page_width, sign_in


def _submit(page, base: str, username: str, password: str) -> None:
    page.goto(f"{base}/admin/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")


def test_it_locks_the_sign_in_after_five_failures_until_unlocked(
    live_server, page, transactional_db, tmp_path
):
    User.objects.create_superuser("frank", "", "frank-pw-2026")
    for n in range(4):
        _submit(page, live_server.url, "frank", f"guess-{n}")
        assert page.locator(".errornote").count() == 1  # the form's own error
        assert page.locator("#xworkmate-locked-out").count() == 0
    _submit(page, live_server.url, "frank", "guess-4")
    locked = page.locator("#xworkmate-locked-out")
    locked.wait_for()
    text = locked.inner_text()
    assert "Sign-in locked" in text
    assert "after 5 failed attempts, signing in as this user from your address is locked for 15 minutes" in text
    page.set_viewport_size(PHONE)
    assert page_width(page) <= PHONE["width"]
    page.screenshot(path=str(tmp_path / "locked-out.png"))

    # The right password changes nothing while the lock holds.
    _submit(page, live_server.url, "frank", "frank-pw-2026")
    page.locator("#xworkmate-locked-out").wait_for()
    page.goto(f"{live_server.url}/admin/")
    assert page.locator("#xworkmate-landing").count() == 0

    call_command("xworkmate", "unlock", "--username", "frank")
    sign_in(page, live_server.url, "frank", "frank-pw-2026")
    assert "Health" in page.locator("#xworkmate-landing").inner_text()
