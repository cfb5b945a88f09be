"""The bridge flow of §15 over real HTTP: gunicorn, as in production, on PostgreSQL.

prepare → the agent writes → agent_end → tasks.get → export with the bridge's
own params → read back → streamed download, each a real HTTP request.
"""

from __future__ import annotations

import base64
import json
import os
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import running_gunicorn
from xworkmate.services import api_key_create


def _call(base: str, token: str, path: str, body: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
    request = urllib.request.Request(
        base + path, data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            raw, status, headers = response.read(), response.status, dict(response.headers)
    except urllib.error.HTTPError as exc:
        raw, status, headers = exc.read(), exc.code, dict(exc.headers)
    if headers.get("Content-Type", "").startswith("application/json"):
        return status, json.loads(raw), headers
    return status, raw, headers


@pytest.fixture
def server(real_services, tmp_path):
    workspace = Path(os.path.realpath(tmp_path)) / "ws"
    workspace.mkdir()
    config = f'[workspace]\nroots = ["{workspace}"]\n'
    with running_gunicorn(tmp_path, config, workers=2) as base:
        yield base, workspace


def test_the_bridge_flow_works_end_to_end_over_http(server):
    base, workspace = server
    _, token = api_key_create(name="bridge", scopes=["gateway:write"])
    session, run = "agent:main:thread-7", "run-7"
    since = int(time.time() * 1000) - 1000  # the bridge captures now-1s before prepare

    status, body, _ = _call(base, token, "/gateway/xworkmate.session.prepare", {
        "schemaVersion": 1, "appThreadKey": "thread-7", "openclawSessionKey": session,
        "runId": run, "requestId": run, "externalTaskId": run})
    assert status == 200, body
    prepared = body["payload"]
    assert prepared["artifactScope"] and prepared["artifactDirectory"]
    directory = Path(prepared["artifactDirectory"])
    assert directory.is_dir() and str(directory).startswith(str(workspace))

    (directory / "summary.md").write_text("# Summary\n", encoding="utf-8")
    (directory / "data.csv").write_bytes(b"a,b\n" * 50000)  # 200 kB: listed, not inlined

    status, body, _ = _call(base, token, "/api/gateway/hooks/agent_end", {
        "event": {"runId": run, "success": True,
                  "messages": [{"role": "assistant", "content": "Done: summary.md, data.csv"}]},
        "ctx": {"sessionKey": session}})
    assert (status, body) == (200, {"ok": True, "recorded": True})

    status, body, _ = _call(base, token, "/gateway/xworkmate.tasks.get", {
        "appThreadKey": "thread-7", "runId": run, "includeArtifacts": True,
        "requiredArtifactExtensions": ["md"]})
    task = body["payload"]
    assert (task["status"], task["success"], task["output"]) == (
        "completed", True, "Done: summary.md, data.csv")
    assert sorted(a["relativePath"] for a in task["artifacts"]) == ["data.csv", "summary.md"]

    # The bridge's export call (§15): no content, refs for every file.
    status, body, _ = _call(base, token, "/gateway/xworkmate.artifacts.export", {
        "openclawSessionKey": session, "runId": run, "sinceUnixMs": since, "maxFiles": 64,
        "maxInlineBytes": 0, "includeContent": False})
    artifacts = {a["relativePath"]: a for a in body["payload"]["artifacts"]}
    assert all("content" not in a for a in artifacts.values())

    status, body, _ = _call(base, token, "/gateway/xworkmate.artifacts.read", {
        "openclawSessionKey": session, "runId": run,
        "artifactRef": artifacts["summary.md"]["artifactRef"]})
    assert base64.b64decode(body["payload"]["artifacts"][0]["content"]) == b"# Summary\n"

    status, raw, headers = _call(base, token, "/api/artifacts/download", {
        "openclawSessionKey": session, "runId": run,
        "artifactRef": artifacts["data.csv"]["artifactRef"]})
    assert status == 200 and raw == b"a,b\n" * 50000
    assert headers["Content-Type"] == "text/csv"
