"""The admin shell: landing page, per-user language, API keys created in the admin."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User

from tests.conftest import ApiClient
from xworkmate.models import ApiKey, UserPreference


@pytest.fixture
def staff(client, db):
    user = User.objects.create_superuser("alice", "", "pw-alice-123")
    client.force_login(user)
    return user


def test_the_landing_page_links_every_part(client, staff):
    page = client.get("/admin/").content.decode()
    for href in ("/healthz", "/api/docs/", "/admin/xworkmate/apikey/",
                 "/admin/xworkmate/periodicjobstate/",
                 "/admin/plans/schedule-preview/"):  # a card the plans app adds (D-K1)
        assert f'href="{href}"' in page, href
    assert 'id="xworkmate-language"' in page
    # The kernel's cards first, then each app's, in INSTALLED_APPS order.
    assert page.index('href="/admin/xworkmate/periodicjobstate/"') < page.index(
        'href="/admin/plans/schedule-preview/"'
    )


def test_the_landing_cards_are_translated(client, staff):
    client.post("/admin/language/", {"language": "zh-hans", "next": "/admin/"})
    page = client.get("/admin/").content.decode()
    assert "调度预览" in page
    assert "Schedule preview" not in page


def test_it_switches_language_per_user(client, staff, settings):
    assert "Overview" in client.get("/admin/").content.decode()  # tests run with "en"
    response = client.post("/admin/language/", {"language": "zh-hans", "next": "/admin/"})
    assert response.status_code == 302 and response["Location"] == "/admin/"
    assert UserPreference.objects.get(user=staff).language == "zh-hans"
    client.cookies.clear()  # the saved preference, not the cookie, must carry it
    client.force_login(staff)
    page = client.get("/admin/").content.decode()
    assert "概览" in page and "界面语言" in page
    # Another user keeps the configured default.
    other = User.objects.create_superuser("bob", "", "pw-bob-12345")
    client.force_login(other)
    assert "Overview" in client.get("/admin/").content.decode()


def test_it_refuses_an_unknown_language_and_an_offsite_redirect(client, staff):
    response = client.post("/admin/language/", {"language": "fr"})
    assert response.status_code == 400
    assert b"language: must be one of zh-hans, en (got 'fr')" in response.content
    assert not UserPreference.objects.exists()
    response = client.post("/admin/language/", {"language": "en", "next": "https://evil.example/"})
    assert response["Location"] == "/admin/"


def test_the_language_switch_needs_a_signed_in_staff_user(client, db):
    response = client.post("/admin/language/", {"language": "en"})
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert not UserPreference.objects.exists()


def test_it_creates_an_api_key_in_the_admin_and_shows_it_once(client, staff, test_methods):
    response = client.post(
        "/admin/xworkmate/apikey/add/",
        {"name": "bridge", "scopes": ["gateway:write", "longrun:read"]},
        follow=True,
    )
    page = response.content.decode()
    token = re.search(r"(xwm_[A-Za-z0-9_-]{40,})", page).group(1)
    key = ApiKey.objects.get(name="bridge")
    assert key.scopes == ["gateway:write", "longrun:read"] and key.created_by == staff
    assert ApiClient(token).post("/gateway/test.echo.write", {}).status_code == 200
    detail = client.get(f"/admin/xworkmate/apikey/{key.pk}/change/").content.decode()
    assert token not in detail and key.prefix in detail


def test_it_refuses_a_bad_key_form_and_writes_nothing(client, staff):
    response = client.post("/admin/xworkmate/apikey/add/", {"name": "no spaces", "scopes": ["gateway:read"]})
    assert response.status_code == 200
    assert "name: must be 1-100 letters" in response.content.decode()
    response = client.post("/admin/xworkmate/apikey/add/", {"name": "ok", "scopes": []})
    assert "This field is required." in response.content.decode()
    assert not ApiKey.objects.exists()


def test_it_revokes_keys_from_the_list(client, staff, make_client, test_methods):
    api = make_client("gateway:read", name="old")
    key = ApiKey.objects.get(name="old")
    client.post("/admin/xworkmate/apikey/", {"action": "revoke_keys", "_selected_action": [key.pk]})
    key.refresh_from_db()
    assert key.revoked_at is not None
    assert api.post("/gateway/test.echo.read", {}).status_code == 401
