"""The OpenAPI schema covers every endpoint, one path per registered gateway method."""

from __future__ import annotations

import importlib

import pytest
from django.urls import clear_url_caches

from xworkmate import methods as gateway


@pytest.fixture
def urls_with_test_methods(test_methods, settings):
    import xworkmate.urls

    importlib.reload(xworkmate.urls)  # the URLconf builds a path per registered method
    clear_url_caches()
    yield test_methods
    for name in test_methods:
        gateway.unregister_method(name)
    importlib.reload(xworkmate.urls)
    clear_url_caches()


def test_the_schema_documents_the_gateway_and_each_method(reader, urls_with_test_methods):
    response = reader.get("/api/schema/?format=json")
    assert response.status_code == 200
    schema = response.json()
    paths = schema["paths"]
    assert "/gateway" in paths and "/gateway/{method}" in paths
    for name in urls_with_test_methods:
        operation = paths[f"/gateway/{name}"]["post"]
        assert operation["summary"].startswith("echo")
        assert set(operation["responses"]) >= {"200", "400", "401", "403", "404", "409"}
    assert "ApiKey" in schema["components"]["securitySchemes"]
    # The method answers at its documented path.
    assert reader.post("/gateway/test.echo.read", {}).json()["ok"] is True


def test_the_docs_page_is_self_hosted(client, db):
    from django.contrib.auth.models import User

    client.force_login(User.objects.create_superuser("docs", "", "pw-docs-1234"))
    page = client.get("/api/docs/").content.decode()
    assert "swagger-ui" in page and "cdn.jsdelivr.net" not in page


def test_the_schema_documents_the_rest_endpoints(reader):
    paths = reader.get("/api/schema/?format=json").json()["paths"]
    preview = paths["/api/plans/schedule-preview"]["post"]
    assert preview["operationId"] == "plans_schedule_preview"
    assert "plans:read" in preview["description"]


def test_the_schema_documents_the_six_contract_methods_with_their_params(reader):
    paths = reader.get("/api/schema/?format=json").json()["paths"]
    contract = [
        "xworkmate.session.prepare", "xworkmate.tasks.get", "xworkmate.artifacts.export",
        "xworkmate.artifacts.collect-and-snapshot", "xworkmate.artifacts.list",
        "xworkmate.artifacts.read",
    ]
    for name in contract:
        operation = paths[f"/gateway/{name}"]["post"]
        body = operation["requestBody"]["content"]["application/json"]["schema"]
        assert "runId" in body["properties"], name
    prepare = paths["/gateway/xworkmate.session.prepare"]["post"]["requestBody"]
    assert prepare["content"]["application/json"]["schema"]["required"] == [
        "appThreadKey", "openclawSessionKey", "runId",
    ]
    for rest in ("/api/artifacts/download", "/api/artifacts/tool", "/api/gateway/native-tasks",
                 "/api/gateway/hooks/agent_end", "/api/gateway/hooks/session_start"):
        assert rest in paths, rest


def test_the_schema_generates_without_warnings(transactional_db, tmp_path):
    """drf-spectacular's own validation, failing on any warning (name clashes, unknown auth)."""
    from tests.conftest import manage

    result = manage("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "s.yaml"))
    assert result.returncode == 0, result.stderr
    assert "ApiKey" in (tmp_path / "s.yaml").read_text()
