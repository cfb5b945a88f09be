"""Browser tests: the admin in Debian's headless Chromium, driven by Playwright."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

# Playwright's sync API keeps an event loop on the test thread; Django's ORM
# calls from the same thread are still plain synchronous calls.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/browser/" in str(item.fspath):
            item.add_marker(pytest.mark.browser)


@pytest.fixture
def page() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    executable = shutil.which("chromium")
    if executable is None:
        pytest.fail("Debian's chromium package is needed for the browser tests")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        context = browser.new_context(locale="en-US")
        yield context.new_page()
        context.close()
        browser.close()


# A phone's viewport: the pages must fit it without sideways scrolling.
PHONE = {"width": 390, "height": 844}


def sign_in(page: Any, base: str, username: str, password: str) -> None:
    """Sign in through the admin's login form and wait for the landing page."""
    page.goto(f"{base}/admin/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.locator("#xworkmate-landing").wait_for()


def page_width(page: Any) -> int:
    """How wide the page's content is (wider than the viewport: it scrolls sideways)."""
    return int(page.evaluate("document.documentElement.scrollWidth"))
