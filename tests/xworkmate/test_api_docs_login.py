"""`/api/docs/` in a browser without a session: the admin login, then back to the docs."""

from __future__ import annotations

from django.contrib.auth.models import User


def test_it_sends_a_visitor_without_a_session_to_the_admin_login_and_back(client, db):
    User.objects.create_superuser("docs", "", "pw-docs-1234")
    response = client.get("/api/docs/")
    assert response.status_code == 302
    assert response["Location"] == "/admin/login/?next=/api/docs/"
    signed_in = client.post(response["Location"], {
        "username": "docs", "password": "pw-docs-1234", "next": "/api/docs/",
    })
    assert signed_in.status_code == 302 and signed_in["Location"] == "/api/docs/"
    page = client.get("/api/docs/")
    assert page.status_code == 200 and "swagger-ui" in page.content.decode()


def test_it_sends_a_non_staff_user_to_the_login_too(client, db):
    client.force_login(User.objects.create_user("visitor", "", "pw-visitor-1234"))
    response = client.get("/api/docs/")
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")


def test_an_api_client_still_gets_json(reader, anonymous):
    assert reader.get("/api/docs/").status_code == 200
    refused = anonymous.client.get("/api/docs/", headers={"Authorization": "Bearer xwm_nope"})
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "UNAUTHORIZED"
