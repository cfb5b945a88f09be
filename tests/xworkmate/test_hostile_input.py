"""Hostile input at the HTTP and parsing level: every API answer is the JSON error shape.

One strict decoding for every body (gateway views, hooks, DRF endpoints), one
rule for query parameters, and JSON answers where Django itself answers under
/api/ and /gateway.
"""

from __future__ import annotations

import io
import json
import logging
import os
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from tests.conftest import ApiClient, configure
from xworkmate import methods as gateway
from xworkmate.services import KeyBinding, api_key_create

REST_BODY_ENDPOINTS = [
    "/api/plans/schedule-preview",
    "/api/gateway/native-tasks",
    "/api/artifacts/download",
    "/api/artifacts/tool",
    "/api/longrun/task-state/set",
    "/api/longrun/work-cycle-tick",
]
ENVELOPE_ENDPOINTS = ["/gateway/xworkmate.tasks.get", "/gateway/xworkmate.session.prepare"]


@pytest.fixture
def workspace(tmp_path: Path, settings: Any) -> Path:
    root = Path(os.path.realpath(tmp_path)) / "ws"
    root.mkdir()
    configure(settings, "workspace", roots=(str(root),))
    return root


@pytest.fixture
def agent(db: None, workspace: Path) -> ApiClient:
    """Every scope, bound to a run: it passes the permission checks of every endpoint."""
    _, token = api_key_create(
        name="hostile-agent",
        scopes=["gateway:write", "plans:write", "longrun:write"],
        binding=KeyBinding(session_key="agent:main:main", run_id="run-1"),
    )
    return ApiClient(token)


def error_of(response: Any, *, envelope: bool) -> dict[str, str]:
    assert response["Content-Type"] == "application/json", response.content[:200]
    body = response.json()
    if envelope:
        assert body["ok"] is False
        assert set(body) == {"ok", "error"}
    else:
        assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message"}
    return dict(body["error"])


def refused(response: Any, message: str, *, envelope: bool, status: int = 400) -> None:
    assert response.status_code == status, response.content[:300]
    assert error_of(response, envelope=envelope) == {"code": "INVALID_REQUEST", "message": message}


ALL_BODY_ENDPOINTS = [(p, False) for p in REST_BODY_ENDPOINTS] + [
    (p, True) for p in [*ENVELOPE_ENDPOINTS, "/gateway"]
]


@pytest.mark.parametrize(("path", "envelope"), ALL_BODY_ENDPOINTS)
@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"workspaceDir": "/tmp/a\\u0000b"}', "workspaceDir: must not contain a NUL character"),
        (b'{"workspaceDir": "\\ud800"}', "workspaceDir: must not contain a lone surrogate (U+D800)"),
        (b'{"params": {"task": {"notes": ["ok", "\\udfff"]}}}',
         "params.task.notes[1]: must not contain a lone surrogate (U+DFFF)"),
        (b'{"event": {"a\\u0000": 1}}', "event: a key must not contain a NUL character"),
        (b'{"\\ud83d": 1}', "request body: a key must not contain a lone surrogate (U+D83D)"),
        (b"[" * 20000, "request body is nested too deeply: at most 128 levels of arrays and objects"),
        (b'{"a": ' + b"[" * 200 + b"]" * 200 + b"}",
         "request body is nested too deeply: at most 128 levels of arrays and objects"),
        (b'{"count": ' + b"9" * 5000 + b"}",
         "count: must be a number within the range of a 64-bit float"),
        (b'{"afterMs": -' + b"9" * 400 + b"}",
         "afterMs: must be a number within the range of a 64-bit float"),
        (b'{"maxFiles": 1e400}', "maxFiles: must be a number within the range of a 64-bit float"),
        (b'{"sinceUnixMs": NaN}', "sinceUnixMs: NaN is not valid JSON (numbers must be finite)"),
        (b'{"x": [Infinity]}', "x[0]: Infinity is not valid JSON (numbers must be finite)"),
        (b'{"x": -Infinity}', "x: -Infinity is not valid JSON (numbers must be finite)"),
        (b"[1, 2]", "request body must be a JSON object (got array)"),
        (b"\xff", "request body is not UTF-8 JSON: invalid start byte"),
        (b"{", "request body is not valid JSON: Expecting property name enclosed in double quotes at line 1 column 2"),
        # Blanks are no JSON text (D-K15); only a body of no bytes at all reads as {}.
        (b" \n", "request body is not valid JSON: Expecting value at line 2 column 1"),
    ],
)
def test_it_refuses_hostile_json_on_every_endpoint_naming_the_field(agent, path, envelope, raw, message):
    refused(agent.post(path, raw=raw), message, envelope=envelope)


def test_it_accepts_paired_surrogates_numbers_at_the_limit_and_128_levels(agent, test_methods):
    body = (
        b'{"emoji": "\\ud83d\\ude00", "big": ' + str(2**1023).encode()
        + b', "deep": ' + b"[" * 127 + b"]" * 127 + b"}"
    )
    response = agent.post("/gateway/test.echo.read", raw=body)
    assert response.status_code == 200, response.content[:300]
    params = response.json()["payload"]["params"]
    assert params["emoji"] == "😀" and params["big"] == 2**1023


def test_it_refuses_a_nul_in_a_query_parameter(agent):
    response = agent.get(
        "/api/artifacts/download?artifactRef=x&openclawSessionKey=s&runId=r&workspaceDir=/tmp/a%00b"
    )
    refused(response, "workspaceDir: must not contain a NUL character", envelope=False)
    response = agent.get("/api/artifacts/download?artifact%00Ref=x")
    refused(response, "query parameter names must not contain a NUL character", envelope=False)
    response = agent.get("/api/ping?x=%00")
    refused(response, "x: must not contain a NUL character", envelope=False)


def test_it_answers_json_404_for_unknown_api_paths(agent):
    for response in (agent.post("/api/nope", {}), agent.get("/api/gateway/nope")):
        assert response.status_code == 404
        assert error_of(response, envelope=False)["code"] == "NOT_FOUND"
    response = agent.post("/gateway/", {"method": "xworkmate.tasks.get"})
    assert response.status_code == 404
    assert error_of(response, envelope=True) == {
        "code": "NOT_FOUND", "message": "no API endpoint at POST /gateway/",
    }


def test_it_keeps_html_404_outside_the_api(client, db):
    response = client.get("/nowhere")
    assert response.status_code == 404 and response["Content-Type"].startswith("text/html")


@pytest.mark.parametrize("path", ["/api/plans/schedule-preview", "/api/gateway/native-tasks",
                                  "/api/artifacts/download", "/api/artifacts/tool"])
def test_it_refuses_bodies_over_djangos_upload_limit_as_json_without_an_error_log(
    agent, path, settings, caplog
):
    limit = settings.XWORKMATE.value("gateway", "max_body_bytes")
    raw = json.dumps({"pad": "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 10)}).encode()
    with caplog.at_level(logging.INFO):
        response = agent.post(path, raw=raw)
    refused(response, f"request body too large: limit is {limit} bytes (gateway.max_body_bytes)",
            envelope=False)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize("path", ["/api/plans/schedule-preview", "/api/gateway/native-tasks",
                                  "/api/artifacts/download", "/api/artifacts/tool"])
def test_it_applies_max_body_bytes_to_every_rest_endpoint(agent, path, settings):
    limit = settings.XWORKMATE.value("gateway", "max_body_bytes")
    assert limit < settings.DATA_UPLOAD_MAX_MEMORY_SIZE  # Django alone would accept it
    raw = json.dumps({"pad": "x" * limit}).encode()
    refused(agent.post(path, raw=raw),
            f"request body too large: limit is {limit} bytes (gateway.max_body_bytes)",
            envelope=False)


def test_a_hook_logs_a_hostile_body_and_answers_200_as_hooks_do(owner, workspace, caplog):
    with caplog.at_level(logging.WARNING, logger="gateway"):
        response = owner.post("/api/gateway/hooks/agent_end",
                              raw=b'{"event": {"runId": "r\\u0000"}, "ctx": {}}')
    assert response.status_code == 200 and response.json() == {"ok": True, "recorded": False}
    assert ("xworkmate agent_end state capture failed: Error: "
            "event.runId: must not contain a NUL character") in caplog.text


def test_it_answers_a_server_error_under_the_api_as_json(agent, caplog):
    def broken(call: gateway.GatewayCall) -> dict[str, Any]:
        raise RuntimeError("boom")

    gateway.register_method(gateway.GatewayMethod("test.broken", broken, "gateway:read", "x"))
    try:
        client = Client(raise_request_exception=False)
        response = client.post("/gateway/test.broken", data=b"{}", content_type="application/json",
                               headers={"Authorization": f"Bearer {agent.token}"})
    finally:
        gateway.unregister_method("test.broken")
    assert response.status_code == 500
    assert error_of(response, envelope=True) == {
        "code": "INTERNAL_ERROR", "message": "internal server error",
    }
    assert "boom" in caplog.text  # Django still logs the traceback


def chunked_post(token: str, path: str, body: bytes, *, terminated: bool) -> Any:
    """A request as a WSGI server hands over a chunked body: no Content-Length."""
    environ: dict[str, Any] = {
        "HTTP_TRANSFER_ENCODING": "chunked",
        "CONTENT_TYPE": "application/json",
        "wsgi.input": io.BytesIO(body),
    }
    if terminated:
        environ["wsgi.input_terminated"] = True
    return Client().generic("POST", path, headers={"Authorization": f"Bearer {token}"}, **environ)


def test_it_reads_a_chunked_body_when_the_server_ends_the_input(owner, agent, test_methods):
    response = chunked_post(owner.token, "/gateway/test.echo.read", b'{"a": 1}', terminated=True)
    assert response.status_code == 200
    assert response.json()["payload"]["params"] == {"a": 1}
    response = chunked_post(agent.token, "/api/plans/schedule-preview",
                            b'{"schedule": {"kind": "every", "everyMs": 1e400}}', terminated=True)
    refused(response, "schedule.everyMs: must be a number within the range of a 64-bit float",
            envelope=False)


def test_it_limits_a_chunked_body_like_any_other(agent, test_methods, settings):
    limit = settings.XWORKMATE.value("gateway", "max_body_bytes")
    body = json.dumps({"pad": "x" * limit}).encode()
    response = chunked_post(agent.token, "/gateway/test.echo.read", body, terminated=True)
    refused(response, f"request body too large: limit is {limit} bytes (gateway.max_body_bytes)",
            envelope=True)


def test_it_refuses_a_chunked_body_it_cannot_read_with_411(agent):
    response = chunked_post(agent.token, "/api/gateway/hooks/agent_end", b'{"event": {}}',
                            terminated=False)
    refused(response, "a chunked request body is not supported here: send Content-Length",
            envelope=False, status=411)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"sessionKey": "s", "task": {"taskId": "t", "status": ["running"]}},
         "task: status: must be one of queued, running, succeeded, completed, failed, timed_out, cancelled, lost (got ['running'])"),
        ({"sessionKey": "s", "task": {"taskId": "t", "status": {"a": 1}}},
         "task: status: must be one of queued, running, succeeded, completed, failed, timed_out, cancelled, lost (got {'a': 1})"),
        ({"sessionKey": 12, "task": {"taskId": "t", "status": "running"}},
         "sessionKey: Not a valid string."),
    ],
)
def test_it_refuses_wrong_types_of_a_native_task_naming_the_field(owner, body, message):
    refused(owner.post("/api/gateway/native-tasks", body), message, envelope=False)


def test_it_refuses_too_many_query_parameters_as_json_without_an_error_log(agent, caplog):
    query = "&".join(f"p{i}=1" for i in range(1100))
    with caplog.at_level(logging.INFO):
        response = agent.get(f"/api/artifacts/download?{query}")
    assert response.status_code == 400
    error = error_of(response, envelope=False)
    assert error["code"] == "INVALID_REQUEST" and error["message"].startswith("query string: ")
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/api/plans?limit=abc&limit=5", "Invalid query parameter `limit`"),
        ("/api/longrun/emit-foreground-due?stale_minutes=x&stale_minutes=5",
         "stale_minutes: given more than once (it takes one value)"),
    ],
)
def test_it_refuses_a_single_valued_query_parameter_given_twice(agent, path, message):
    refused(agent.get(path), message, envelope=False)


def test_an_empty_query_value_is_a_value(agent):
    response = agent.get("/api/longrun/emit-recovery-message?stale_minutes=")
    assert response.status_code == 400 and "stale_minutes" in response.json()["error"]["message"]
