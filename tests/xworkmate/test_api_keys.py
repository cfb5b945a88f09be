"""API keys: hashed at rest, scoped, revocable, and outsiders refused everywhere."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.urls import get_resolver
from django.utils import timezone

from tests.conftest import ApiClient
from tests.conftest import manage as _manage
from xworkmate.models import ApiKey
from xworkmate.policies import scope_allows
from xworkmate.services import ApiKeyError, api_key_create, api_key_revoke, api_key_touch


def test_it_stores_only_the_hash(db):
    key, token = api_key_create(name="bridge", scopes=["gateway:write"])
    assert token.startswith("xwm_") and len(token) > 40
    row = ApiKey.objects.filter(pk=key.pk).values().get()
    assert token not in {str(v) for v in row.values()}
    assert key.prefix == token[:10] and len(row["key_hash"]) == 64
    # Nothing in the whole table holds the token either.
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM xworkmate_apikey")
        assert all(token not in str(cell) for r in cursor.fetchall() for cell in r)


@pytest.mark.parametrize(
    ("granted", "required", "allowed"),
    [
        (["gateway:read"], "gateway:read", True),
        (["gateway:write"], "gateway:read", True),
        (["gateway:read"], "gateway:write", False),
        (["plans:write"], "gateway:read", False),
        (["plans:read", "longrun:write"], "longrun:read", True),
        ([], "plans:read", False),
    ],
)
def test_it_lets_write_imply_read_within_an_area_only(granted, required, allowed):
    assert scope_allows(granted, required) is allowed


def test_it_refuses_a_read_only_key_on_a_write_method(reader, test_methods):
    assert reader.post("/gateway/test.echo.read", {}).status_code == 200
    response = reader.post("/gateway/test.echo.write", {})
    assert response.status_code == 403
    assert response.json() == {
        "ok": False,
        "error": {
            "code": "FORBIDDEN",
            "message": "API key lacks scope gateway:write for test.echo.write",
        },
    }
    # The envelope form checks the same scope.
    assert reader.post("/gateway", {"method": "test.echo.write"}).status_code == 403


def test_it_refuses_a_plans_key_on_the_gateway(outsider, test_methods):
    for path, body in (
        ("/gateway/test.echo.read", {}),
        ("/gateway", {"method": "test.echo.read"}),
        ("/gateway/xworkmate.unknown", {}),
    ):
        response = outsider.post(path, body)
        assert response.status_code == 403
        assert response.json()["error"] == {
            "code": "FORBIDDEN", "message": "API key lacks scope gateway:read",
        }


def test_it_refuses_a_revoked_key(make_client, test_methods):
    client = make_client("gateway:write", name="soon-revoked")
    assert client.post("/gateway/test.echo.read", {}).status_code == 200
    key = ApiKey.objects.get(name="soon-revoked")
    assert api_key_revoke(key=key, now=timezone.now()) is True
    assert api_key_revoke(key=key, now=timezone.now()) is False  # sticky, once
    response = client.post("/gateway/test.echo.read", {})
    assert response.status_code == 401
    assert response.json()["error"] == {"code": "UNAUTHORIZED", "message": "API key has been revoked"}


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (None, "Authentication credentials were not provided."),
        ("Bearer xwm_not-a-real-key", "invalid API key"),
        ("Bearer ", "Authorization header has no API key after 'Bearer'"),
        ("Token abc", "Authentication credentials were not provided."),
    ],
)
def test_it_answers_401_without_a_valid_key(client, db, test_methods, header, message):
    headers = {"Authorization": header} if header else {}
    response = client.post(
        "/gateway/test.echo.read", data="{}", content_type="application/json", headers=headers
    )
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == 'Bearer realm="xworkmate"'
    assert response.json()["error"] == {"code": "UNAUTHORIZED", "message": message}


def _api_paths() -> list[tuple[str, str]]:
    """Every non-admin URL of the service, with the method it serves."""
    paths = []
    for pattern in get_resolver().url_patterns:
        route = str(pattern.pattern)
        if route.startswith(("admin/", "healthz")) or route == "":
            continue
        concrete = route.replace("<path:method>", "xworkmate.session.prepare")
        method = "get" if route.startswith("api/") else "post"
        paths.append((method, "/" + concrete))
    return paths


def test_it_refuses_outsiders_on_every_api_endpoint(anonymous, outsider, test_methods):
    paths = _api_paths()
    assert ("post", "/gateway") in paths and ("get", "/api/schema/") in paths
    for method, path in paths:
        response = getattr(anonymous, method)(path)
        if path == "/api/docs/":
            # A browser without a session is sent to the admin login (and back).
            assert response.status_code == 302 and "/admin/login/" in response["Location"]
            continue
        assert response.status_code == 401, path
        if path.startswith("/gateway"):
            assert outsider.post(path).status_code == 403, path


def test_it_redirects_anonymous_admin_visitors_to_login(client):
    for path in ("/admin/", "/admin/xworkmate/apikey/", "/admin/xworkmate/periodicjobstate/"):
        response = client.get(path)
        assert response.status_code == 302 and "/admin/login/" in response["Location"], path


def test_it_records_last_use_at_most_once_a_minute(make_client, test_methods):
    client = make_client("gateway:read", name="used")
    key = ApiKey.objects.get(name="used")
    assert key.last_used_at is None
    client.post("/gateway/test.echo.read", {})
    key.refresh_from_db()
    first = key.last_used_at
    assert first is not None
    api_key_touch(key=key, now=first + timedelta(seconds=30))
    key.refresh_from_db()
    assert key.last_used_at == first
    later = first + timedelta(seconds=61)
    api_key_touch(key=key, now=later)
    key.refresh_from_db()
    assert key.last_used_at == later


@pytest.mark.parametrize(
    ("name", "scopes", "message"),
    [
        ("", ["gateway:read"], "name: must be 1-100 letters"),
        ("has space", ["gateway:read"], "name: must be 1-100 letters"),
        ("ok", [], "scope: at least one scope is required"),
        ("ok", ["gateway:admin"], "scope: unknown scope 'gateway:admin'"),
    ],
)
def test_it_refuses_bad_key_input_and_writes_nothing(db, name, scopes, message):
    with pytest.raises(ApiKeyError, match=message):
        api_key_create(name=name, scopes=scopes)
    assert ApiKey.objects.count() == 0


def test_a_fresh_last_use_costs_no_write(make_client, test_methods, django_assert_num_queries):
    """D-K8: the row just read says the last use is recent, so nothing is written."""
    client = make_client("gateway:read", name="busy")
    client.get("/api/ping")  # the first use is recorded
    with django_assert_num_queries(1) as captured:  # the key lookup, and no UPDATE
        assert client.get("/api/ping").status_code == 200
    assert captured.captured_queries[0]["sql"].startswith("SELECT")


def test_a_name_taken_between_the_check_and_the_insert_is_the_same_clean_error(db, monkeypatch):
    """Two callers creating one name at once: the loser gets ApiKeyError, never a 500."""
    import xworkmate.services as services

    real = services.secrets.token_urlsafe

    def rival_wins(nbytes):
        # The other caller commits its key after our existence check, before our insert.
        ApiKey.objects.create(name="raced", prefix="xwm_x", key_hash="0" * 64, scopes=["gateway:read"])
        return real(nbytes)

    monkeypatch.setattr(services.secrets, "token_urlsafe", rival_wins)
    with pytest.raises(ApiKeyError, match="name: an API key named 'raced' already exists"):
        api_key_create(name="raced", scopes=["gateway:read"])
    assert ApiKey.objects.filter(name="raced").count() == 1


def test_it_refuses_a_duplicate_name(db):
    api_key_create(name="bridge", scopes=["gateway:read"])
    with pytest.raises(ApiKeyError, match="name: an API key named 'bridge' already exists"):
        api_key_create(name="bridge", scopes=["gateway:write"])
    assert ApiKey.objects.count() == 1


def test_it_creates_lists_and_revokes_keys_from_the_command_line(transactional_db):
    created = _manage("xworkmate", "apikey", "create", "--name", "cli-bridge",
                      "--scope", "gateway:write", "--scope", "longrun:read")
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip().splitlines()[-1]
    assert token.startswith("xwm_")
    client = ApiClient(token)
    key = ApiKey.objects.get(name="cli-bridge")
    assert key.scopes == ["gateway:write", "longrun:read"]
    listed = _manage("xworkmate", "apikey", "list")
    assert "cli-bridge" in listed.stdout and token not in listed.stdout
    bad = _manage("xworkmate", "apikey", "create", "--name", "cli-bridge", "--scope", "plans:read")
    assert bad.returncode != 0 and "already exists" in bad.stderr
    revoked = _manage("xworkmate", "apikey", "revoke", "cli-bridge")
    assert revoked.returncode == 0 and "revoked API key 'cli-bridge'" in revoked.stdout
    assert client.post("/gateway", {"method": "x"}).status_code == 401
