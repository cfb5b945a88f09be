"""Property: whatever a caller sends to any API endpoint, the answer is below 500 and JSON.

The endpoints are enumerated from the URLconf, so an endpoint added later is
covered without touching this file. Bodies are generated: random JSON with the
service's own field names, deep nesting, huge and non-finite numbers, NUL and
lone surrogates in values and keys, wrong types, bytes that are no JSON, and
wrong content types; GET endpoints also get generated query strings. Every
refusal must be the API's error shape (the gateway envelope under /gateway).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import configure, url_routes
from xworkmate.methods import registered_methods
from xworkmate.services import KeyBinding, api_key_create

_PARAM = re.compile(r"<(?:\w+:)?(\w+)>")


def api_endpoints() -> Iterator[tuple[str, Any]]:
    """(path, view) of every URL under /api/ and /gateway, with path params filled in."""

    seen: dict[str, Any] = {}
    for route, pattern in url_routes():
        path = "/" + _PARAM.sub("xworkmate.no-such-method", route).lstrip("^").rstrip("$")
        if path.startswith(("/api/", "/gateway")):
            seen.setdefault(path, pattern.callback)
    return iter(sorted(seen.items()))


ENDPOINTS = [path for path, _ in api_endpoints()]

FIELDS = [
    "openclawSessionKey", "appThreadKey", "runId", "taskId", "requestId", "workspaceDir",
    "artifactRef", "artifactScope", "relativePath", "sourceFiles", "expectedArtifactDirs",
    "maxFiles", "maxInlineBytes", "sinceUnixMs", "includeArtifacts", "includeContent",
    "requiredArtifactExtensions", "expectedFileCountByExtension", "schedule", "afterMs", "count",
    "jobId", "hostTz", "sessionKey", "task", "status", "event", "ctx", "messages", "success",
    "error", "method", "params", "action", "kind", "everyMs", "anchorMs", "staggerMs", "expr",
    "tz", "at", "schemaVersion", "label", "session", "state", "origin_session_key", "goal",
    "next_check", "note", "progress_every", "force_lock", "step", "stale_minutes", "idle_seconds",
    "expect_state", "drop_task", "apply", "message", "session_key",
]
NASTY_TEXT = ["\x00", "a\x00b", "\ud800", "x\udfffy", "\ud83d", "../../etc/passwd", "/", "",
              " ", "\\", "tasks/x/y", "C:\\x", "\ufeff", "𝔘", "%00", "run-1", "agent:main:main"]

texts = st.one_of(st.text(max_size=20), st.sampled_from(NASTY_TEXT))
numbers = st.one_of(
    st.integers(),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0, -1, 1.5, 2**53 + 1, 10**20, 1e20, 1e300]),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, texts)
keys = st.one_of(st.sampled_from(FIELDS), texts)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(keys, children, max_size=5)
    ),
    max_leaves=25,
)
objects = st.dictionaries(keys, json_values, max_size=8)
envelopes = st.builds(
    lambda method, params: {"method": method, "params": params},
    st.one_of(st.sampled_from([m.name for m in registered_methods()]), texts),
    st.one_of(objects, json_values),
)


def _dump(value: Any) -> bytes:
    # ensure_ascii escapes lone surrogates as \udXXX: valid JSON text, as a client may send it.
    return json.dumps(value).encode()


# JSON that Python's json.dumps cannot write: literals and sizes spliced in as text.
spliced = st.one_of(
    st.integers(min_value=1, max_value=30000).map(lambda n: b"[" * n + b"]" * n),
    st.integers(min_value=1, max_value=30000).map(lambda n: b"[" * n),
    st.integers(min_value=100, max_value=300).map(lambda n: b'{"a":' * n + b"1" + b"}" * n),
    st.builds(
        lambda field, token: b'{"' + field.encode() + b'": ' + token + b"}",
        st.sampled_from(FIELDS),
        st.sampled_from([b"NaN", b"Infinity", b"-Infinity", b"1e400", b"-1e400", b"9" * 5000,
                         b"-" + b"9" * 5000, b"0." + b"0" * 5000 + b"1", b'"\\u0000"',
                         b'"\\ud800"', b"[1e999]", b"01", b"1.", b"tru"]),
    ),
    st.builds(
        lambda field, inner: b'{"' + field.encode() + b'": {"' + inner.encode() + b'": "\\u0000"}}',
        st.sampled_from(["task", "event", "ctx", "schedule", "params"]),
        st.sampled_from(FIELDS),
    ),
)
# Near-valid bodies: a real call of some endpoint with one value replaced by a
# hostile one, so the checks behind the first field are reached too.
AFTER = 1772870400000
TEMPLATES: list[dict[str, Any]] = [
    {"sessionKey": "agent:main:main", "task": {"taskId": "t-1", "status": "running", "runId": "run-1"}},
    {"schedule": {"kind": "every", "everyMs": 3600000, "anchorMs": AFTER}, "afterMs": AFTER, "count": 3},
    {"schedule": {"kind": "cron", "expr": "0 9 * * *", "tz": "UTC", "staggerMs": 0},
     "jobId": "job-1", "hostTz": "UTC", "afterMs": AFTER},
    {"schedule": {"kind": "at", "at": "2026-12-01T09:00:00+08:00"}, "afterMs": AFTER},
    {"schemaVersion": 1, "appThreadKey": "thread-1", "openclawSessionKey": "agent:main:main",
     "runId": "run-1", "requestId": "run-1", "externalTaskId": "run-1", "expectedArtifactDirs": ["out"]},
    {"openclawSessionKey": "agent:main:main", "appThreadKey": "thread-1", "runId": "run-1",
     "taskId": "run-1", "includeArtifacts": True, "includeContent": True, "maxFiles": 5,
     "maxInlineBytes": 100, "sinceUnixMs": 0, "requiredArtifactExtensions": ["md"],
     "expectedFileCountByExtension": {"md": 1}, "expectedArtifactDirs": ["out"]},
    {"openclawSessionKey": "agent:main:main", "runId": "run-1", "artifactRef": "eyJ2IjoyfQ.c2ln",
     "relativePath": "a.md", "artifactScope": "tasks/agent_main_main/run-1"},
    {"openclawSessionKey": "agent:main:main", "runId": "run-1", "sourceFiles": ["/tmp/x.png"],
     "label": "charts"},
    {"event": {"runId": "run-1", "success": True, "sessionKey": "agent:main:main", "error": "e",
               "messages": [{"role": "assistant", "content": [{"type": "text", "text": "x"}]}]},
     "ctx": {"sessionKey": "agent:main:main", "appThreadKey": "thread-1"}},
    {"action": "read", "relativePath": "a.md", "artifactScope": "tasks/x/y", "artifactRef": "x.y",
     "maxFiles": 3, "maxInlineBytes": 10, "sinceUnixMs": 1},
    {"task": "迁移", "session": "迁移会话", "state": "executing", "origin_session_key": "agent:main:main",
     "goal": "g", "done_when": "d", "blocked_when": "b", "boundary": "x", "next_check": "10m",
     "note": "n", "progress_every": "3m", "force_lock": False, "reopen": False, "step": "s",
     "stale_minutes": 10, "idle_seconds": 60, "apply": False, "drop_task": ["回归-1"],
     "message": "进入长任务模式", "session_key": "agent:main:main", "error": "e",
     "delivery_id": "fg-1", "message_hash": "ab"},
]
hostile_values = st.one_of(
    json_values,
    st.sampled_from([None, True, 0, -1, 0.5, 1e20, [], {}, [[]], {"a": {}}, "x" * 600, ""]),
)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*path, index))
    return found


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, *rest = path
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[head] = _replace(value[head], tuple(rest), new)
    return copy


# Which templates a known endpoint takes (by a part of its path); any other
# endpoint, a new one included, draws from all of them.
TEMPLATES_OF = {
    "native-tasks": [0], "schedule-preview": [1, 2, 3], "session.prepare": [4], "tasks.get": [5],
    "artifacts.export": [5], "artifacts.list": [5], "artifacts.read": [6], "download": [6],
    "collect-and-snapshot": [7], "hooks/": [8], "artifacts/tool": [9], "api/longrun/": [10],
}


def templates_for(path: str) -> list[dict[str, Any]]:
    for part, indexes in TEMPLATES_OF.items():
        if part in path:
            return [TEMPLATES[i] for i in indexes]
    return TEMPLATES


@st.composite
def near_valid(draw: Any, path: str) -> dict[str, Any]:
    template = draw(st.sampled_from(templates_for(path)))
    if path == "/gateway":
        template = {"method": draw(st.sampled_from([m.name for m in registered_methods()])),
                    "params": template}
    where = draw(st.sampled_from(_paths(template)[1:]))
    return _replace(template, where, draw(hostile_values))  # type: ignore[no-any-return]


@st.composite
def requests(draw: Any, path: str) -> tuple[str, bytes, str]:
    """(HTTP method, body, content type): mostly near-valid JSON posts, else anything."""
    if draw(st.integers(min_value=0, max_value=9)) < 7:
        return "POST", _dump(draw(near_valid(path))), "application/json"
    verb = draw(st.sampled_from(["POST", "PUT", "PATCH", "DELETE"]))
    return verb, draw(other_bodies), draw(content_types)


other_bodies = st.one_of(
    objects.map(_dump),
    envelopes.map(_dump),
    json_values.map(_dump),
    spliced,
    st.binary(max_size=64),
    st.just(b""),
)
content_types = st.sampled_from([
    "application/json", "application/json; charset=utf-8", "application/json; charset=utf-16",
    "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=xyz",
    "application/octet-stream", "",
])
queries = st.lists(st.tuples(keys, texts), max_size=5).map(
    lambda pairs: "&".join(
        f"{quote(k, safe='', errors='surrogatepass')}={quote(v, safe='', errors='surrogatepass')}"
        for k, v in pairs
    )
)


@pytest.fixture
def callers(db: None, tmp_path: Path, settings: Any) -> list[str]:
    """The bridge (every scope, unbound) and an agent (every scope, bound to a run)."""
    root = Path(os.path.realpath(tmp_path)) / "ws"
    root.mkdir()
    configure(settings, "workspace", roots=(str(root),))
    scopes = ["gateway:write", "plans:write", "longrun:write"]
    _, bridge = api_key_create(name="bridge", scopes=scopes)
    _, agent = api_key_create(name="agent", scopes=scopes,
                              binding=KeyBinding(session_key="agent:main:main", run_id="run-1"))
    return [bridge, agent]


def assert_api_answer(path: str, method: str, response: Any) -> None:
    status = response.status_code
    assert status < 500, (method, path, status, getattr(response, "content", b"")[:300])
    content_type = response.get("Content-Type", "")
    if status < 400 and method == "GET" and path in ("/api/schema/", "/api/docs/"):
        return  # the schema (YAML) and the docs page (HTML) themselves
    if getattr(response, "streaming", False):
        assert status == 200  # a download; no generated ref can be valid
        return
    assert content_type.startswith("application/json"), (method, path, status, content_type)
    body = response.json()
    if status >= 400:
        envelope = path == "/gateway" or path.startswith("/gateway/")
        if envelope:
            assert body.get("ok") is False and set(body) == {"ok", "error"}, body
        else:
            assert set(body) == {"error"}, body
        assert set(body["error"]) == {"code", "message"}, body
        assert isinstance(body["error"]["code"], str) and body["error"]["code"]
        assert isinstance(body["error"]["message"], str) and body["error"]["message"]


def test_it_enumerates_every_api_endpoint_from_the_urlconf():
    assert {"/gateway", "/api/ping", "/api/plans/schedule-preview", "/api/gateway/native-tasks",
            "/api/gateway/hooks/agent_end", "/api/gateway/hooks/session_start",
            "/api/artifacts/download", "/api/artifacts/tool", "/api/schema/",
            "/api/docs/", "/api/longrun/task-state/set", "/api/longrun/watchdog"} <= set(ENDPOINTS)
    assert {f"/gateway/{m.name}" for m in registered_methods()} <= set(ENDPOINTS)
    assert "/gateway/xworkmate.no-such-method" in ENDPOINTS  # the generic method route


_SETTINGS = settings(
    max_examples=60, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                           HealthCheck.data_too_large],
)


@pytest.mark.parametrize("path", ENDPOINTS)
@_SETTINGS
@given(data=st.data())
def test_it_answers_any_body_below_500_with_the_json_error_shape(callers, path, data):
    token = data.draw(st.sampled_from(callers), label="key")
    verb, body, content_type = data.draw(requests(path), label="request")
    extra = {"CONTENT_TYPE": content_type} if content_type else {}
    response = Client().generic(
        verb, path, data=body, content_type=content_type or "application/json",
        headers={"Authorization": f"Bearer {token}"}, **extra,
    )
    assert_api_answer(path, verb, response)


@pytest.mark.parametrize("path", ENDPOINTS)
@_SETTINGS
@given(data=st.data())
def test_it_answers_any_query_below_500_with_the_json_error_shape(callers, path, data):
    token = data.draw(st.sampled_from(callers), label="key")
    query = data.draw(queries, label="query")
    response = Client().get(f"{path}?{query}", headers={"Authorization": f"Bearer {token}"})
    assert_api_answer(path, "GET", response)
