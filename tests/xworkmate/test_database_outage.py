"""D-K22: a database outage is a 503 with Retry-After in the error shape, never a 500."""

from __future__ import annotations

import json
import sys

import pytest
from django.db import OperationalError
from django.test import RequestFactory

from xworkmate.api_errors import RETRY_AFTER_SECONDS, handler500

pytestmark = pytest.mark.django_db


def _down(*args: object, **kwargs: object) -> None:
    raise OperationalError("connection to server at 127.0.0.1:5432 failed: Connection refused")


def test_a_rest_view_that_meets_an_outage_answers_503_with_retry_after(client, monkeypatch):
    # The API key lookup is the first query every API request makes.
    monkeypatch.setattr("xworkmate.auth.ApiKeyAuthentication.authenticate", _down)
    response = client.get("/api/longrun/task-state/list", HTTP_AUTHORIZATION="Bearer xk_x")
    assert response.status_code == 503
    assert response["Retry-After"] == str(RETRY_AFTER_SECONDS)
    assert response.json() == {
        "error": {"code": "UNAVAILABLE", "message": "the database is unavailable; retry later"}
    }


def test_the_gateway_answers_an_outage_in_its_envelope(client, monkeypatch):
    monkeypatch.setattr("xworkmate.auth.ApiKeyAuthentication.authenticate", _down)
    response = client.post(
        "/gateway", data=json.dumps({"method": "xworkmate.tasks.get", "params": {}}),
        content_type="application/json", HTTP_AUTHORIZATION="Bearer xk_x",
    )
    assert response.status_code == 503
    assert response["Retry-After"] == str(RETRY_AFTER_SECONDS)
    body = response.json()
    assert body["ok"] is False and body["error"]["code"] == "UNAVAILABLE"


def test_an_outage_before_any_view_is_a_503_too():
    request = RequestFactory().get("/api/plans")
    try:
        _down()
    except OperationalError:
        assert sys.exc_info()[0] is OperationalError
        response = handler500(request)
    assert response.status_code == 503
    assert response["Retry-After"] == str(RETRY_AFTER_SECONDS)


def test_a_real_bug_stays_a_500():
    request = RequestFactory().get("/api/plans")
    try:
        raise ZeroDivisionError
    except ZeroDivisionError:
        response = handler500(request)
    assert response.status_code == 500
    assert json.loads(response.content)["error"]["code"] == "INTERNAL_ERROR"


def test_an_admin_page_keeps_djangos_own_error_page(client, monkeypatch):
    request = RequestFactory().get("/admin/")
    try:
        _down()
    except OperationalError:
        response = handler500(request)
    assert response.status_code == 500
