"""Chunked request bodies over real HTTP: gunicorn, as in production, on PostgreSQL.

A `Transfer-Encoding: chunked` body carries no Content-Length; Django alone
reads it as empty, so an agent_end hook answered 200 `recorded: false` and the
run's result was lost. Here each body is sent chunked by http.client and must
be read, with the same size limit as any other body.
"""

from __future__ import annotations

import http.client
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import running_gunicorn
from xworkmate.services import api_key_create

MAX_BODY = 4096


@pytest.fixture
def server(real_services: None, tmp_path: Path) -> Iterator[int]:
    workspace = Path(os.path.realpath(tmp_path)) / "ws"
    workspace.mkdir()
    config = f'[workspace]\nroots = ["{workspace}"]\n\n[gateway]\nmax_body_bytes = {MAX_BODY}\n'
    with running_gunicorn(tmp_path, config, workers=1) as base:
        yield int(base.rsplit(":", 1)[1])


def post(port: int, token: str, path: str, body: bytes, *, chunked: bool) -> tuple[int, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    if chunked:
        # An iterable body without Content-Length: http.client sends it chunked.
        pieces = [body[i:i + 7] for i in range(0, len(body), 7)]
        connection.request("POST", path, body=iter(pieces), headers=headers, encode_chunked=True)
    else:
        connection.request("POST", path, body=body, headers=headers)
    response = connection.getresponse()
    raw = response.read()
    connection.close()
    assert response.getheader("Content-Type", "").startswith("application/json"), raw[:200]
    return response.status, json.loads(raw)


def test_it_reads_chunked_bodies_through_gunicorn(server):
    port = server
    _, token = api_key_create(name="bridge", scopes=["gateway:write"])
    session, run = "agent:main:thread-9", "run-9"

    status, body = post(port, token, "/gateway/xworkmate.session.prepare", json.dumps({
        "appThreadKey": "thread-9", "openclawSessionKey": session, "runId": run,
    }).encode(), chunked=True)
    assert status == 200 and body["ok"] is True, body

    status, body = post(port, token, "/api/gateway/hooks/agent_end", json.dumps({
        "event": {"runId": run, "success": True,
                  "messages": [{"role": "assistant", "content": "Sent in chunks."}]},
        "ctx": {"sessionKey": session},
    }).encode(), chunked=True)
    assert (status, body) == (200, {"ok": True, "recorded": True})

    status, body = post(port, token, "/gateway/xworkmate.tasks.get", json.dumps({
        "appThreadKey": "thread-9", "runId": run, "includeArtifacts": False,
    }).encode(), chunked=True)
    assert (status, body["payload"]["status"], body["payload"]["output"]) == (
        200, "completed", "Sent in chunks.")

    # A DRF-parsed endpoint reads it too.
    status, body = post(port, token, "/api/gateway/native-tasks", json.dumps({
        "sessionKey": session, "task": {"taskId": "t-9", "status": "running", "runId": run},
    }).encode(), chunked=True)
    assert status == 201 and body["status"] == "running", body


def test_it_limits_chunked_bodies_like_any_other(server):
    port = server
    _, token = api_key_create(name="bridge", scopes=["gateway:write"])
    too_large = json.dumps({"openclawSessionKey": "s", "pad": "x" * MAX_BODY}).encode()
    message = f"request body too large: limit is {MAX_BODY} bytes (gateway.max_body_bytes)"
    for chunked in (True, False):
        status, body = post(port, token, "/gateway/xworkmate.tasks.get", too_large, chunked=chunked)
        assert (status, body) == (
            400, {"ok": False, "error": {"code": "INVALID_REQUEST", "message": message}})
        status, body = post(port, token, "/api/gateway/native-tasks", too_large, chunked=chunked)
        assert (status, body) == (400, {"error": {"code": "INVALID_REQUEST", "message": message}})
