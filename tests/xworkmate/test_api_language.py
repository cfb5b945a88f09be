"""API answers speak English unless Accept-Language asks otherwise; the admin keeps its default (issue 9 §8)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from tests.conftest import ApiClient
from xworkmate.middleware import api_language
from xworkmate.models import UserPreference

PREVIEW = "/api/plans/schedule-preview"
TOO_MANY = {"schedule": {"kind": "every", "everyMs": 60000}, "count": 51}


@pytest.fixture
def chinese_default(settings):
    """The shipped default: service.language_code = "zh-hans" (the tests run with "en")."""
    settings.LANGUAGE_CODE = "zh-hans"


def _message(response):
    return response.json()["error"]["message"]


def test_drf_messages_are_english_by_default_even_when_the_admin_is_chinese(chinese_default, make_client, client):
    assert _message(ApiClient(None).post(PREVIEW, TOO_MANY)) == "Authentication credentials were not provided."
    planner = make_client("plans:read", name="planner")
    response = planner.post(PREVIEW, TOO_MANY)
    assert response.status_code == 400
    assert _message(response) == "count: Ensure this value is less than or equal to 50."
    assert response["Content-Language"] == "en"
    # The admin still opens in the configured language.
    assert "登录" in client.get("/admin/login/").content.decode()


def test_accept_language_picks_another_language_for_the_api(chinese_default, make_client):
    planner = make_client("plans:read", name="planner")
    headers = {"Authorization": f"Bearer {planner.token}", "Accept-Language": "zh-CN,zh;q=0.9"}
    response = planner.client.post(PREVIEW, TOO_MANY, content_type="application/json", headers=headers)
    assert _message(response) == "count: 请确保该值小于或者等于 50。"
    assert response["Content-Language"] == "zh-hans"
    anonymous = planner.client.post(PREVIEW, {}, content_type="application/json",
                                    headers={"Accept-Language": "zh-Hans"})
    assert _message(anonymous) == "身份认证信息未提供。"


def test_the_gateway_envelope_is_english_too(chinese_default, anonymous):
    body = anonymous.post("/gateway/xworkmate.tasks.get", {}).json()
    assert body["ok"] is False and body["error"]["message"] == "Authentication credentials were not provided."


def test_a_staff_users_admin_language_does_not_change_the_api(chinese_default, client, db):
    user = User.objects.create_superuser("alice", "", "pw-alice-123")
    UserPreference.objects.create(user=user, language="zh-hans")
    client.force_login(user)
    client.cookies["django_language"] = "zh-hans"
    response = client.post(PREVIEW, {}, content_type="application/json")
    assert response.json()["error"]["message"] == "Authentication credentials were not provided."
    assert "概览" in client.get("/admin/").content.decode()  # the admin keeps the user's choice


@pytest.mark.parametrize(
    ("header", "language"),
    [("", "en"), ("fr, de;q=0.8", "en"), ("fr, zh-Hans;q=0.5", "zh-hans"), ("zh", "zh-hans"),
     ("en-GB,zh;q=0.1", "en"), ("*", "en"), ("zh;q=0.2, en;q=0.9", "en")],
)
def test_it_reads_the_accept_language_header(header, language):
    assert api_language(header) == language


# --- the service's own messages follow Accept-Language too (issue 22) --------------------

ZH = {"Accept-Language": "zh-Hans"}


def _ask(client, method, path, *, token=None, language=None, body=None):
    headers = {**({"Authorization": f"Bearer {token}"} if token else {}), **(language or {})}
    if method == "post":
        return client.post(path, body or {}, content_type="application/json", headers=headers)
    return client.get(path, headers=headers)


@pytest.mark.parametrize(
    ("who", "method", "path", "english", "chinese"),
    [
        ("nobody", "get", "/api/plans", "invalid API key", "API 密钥无效"),
        ("gateway", "post", "/gateway/xworkmate.no.such", "unknown method: xworkmate.no.such",
         "未知方法：xworkmate.no.such"),
        ("gateway", "post", "/gateway/xworkmate.session.prepare",
         "API key lacks scope gateway:write for xworkmate.session.prepare",
         "API 密钥缺少调用 xworkmate.session.prepare 所需的权限范围 gateway:write"),
        ("planner", "get", "/api/longrun/task-state/list", "API key lacks scope longrun:read",
         "API 密钥缺少权限范围 longrun:read"),
        ("planner", "get", "/api/plans?limit=abc", "Invalid query parameter `limit`",
         "无效的查询参数 `limit`"),
        ("planner", "get", "/api/delivery/pending?sessionKey=a&limit=1&limit=2",
         "API key lacks scope delivery:read", "API 密钥缺少权限范围 delivery:read"),
        ("delivery", "get", "/api/delivery/pending?sessionKey=a&limit=1&limit=2",
         "limit: given more than once (it takes one value)", "limit: 给出了不止一次（它只接受一个值）"),
        ("planner", "get", "/api/plans?x%00=1", "query parameter names must not contain a NUL character",
         "查询参数名不得包含 NUL 字符"),
    ],
)
def test_the_services_own_api_messages_are_translated_when_asked(
    chinese_default, make_client, client, who, method, path, english, chinese
):
    token = {
        "nobody": "xw_not-a-key",
        "planner": make_client("plans:write", name="planner").token,
        "delivery": make_client("delivery:read", name="bridge").token,
        "gateway": make_client("gateway:read", name="reader").token,
    }[who]
    assert _message(_ask(client, method, path, token=token)) == english
    answer = _ask(client, method, path, token=token, language=ZH)
    assert _message(answer) == chinese
    assert answer["Content-Language"] == "zh-hans"
