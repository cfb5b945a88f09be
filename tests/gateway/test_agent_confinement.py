"""An agent key (bound to one session and run) acts on that run only, on every endpoint.

The invariant of issue 9 §1: whatever session, run, thread or workspace the body
names, a bound key's call acts on the bound ones, or is refused; never on another's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.models import NativeTask, SessionMapping, TaskRun
from tests.conftest import ApiClient
from tests.gateway.conftest import call, native, prepare, session_start, tasks_get
from xworkmate.services import KeyBinding, api_key_create

VICTIM = {"openclawSessionKey": "victim", "runId": "vr", "appThreadKey": "victim-thread"}


@pytest.fixture
def scene(bridge: ApiClient, workspace: Path):
    """The bridge mapped a victim's run and the agent's own run; the agent gets its key."""
    prepare(bridge, **VICTIM)
    (workspace / "tasks/victim/vr/secret.md").write_text("the victim's")
    prepare(bridge, appThreadKey="agent-thread", openclawSessionKey="agent-s", runId="agent-r")
    (workspace / "tasks/agent-s/agent-r/mine.md").write_text("mine")
    (workspace / "shared").mkdir()
    (workspace / "shared/other.md").write_text("shared")
    (workspace / "elsewhere/tasks").mkdir(parents=True)
    _, token = api_key_create(
        name="agent", scopes=["gateway:write"], binding=KeyBinding(session_key="agent-s", run_id="agent-r")
    )
    return ApiClient(token)


def _victim_ref(bridge: ApiClient):
    status, body = call(bridge, "xworkmate.artifacts.export", {"openclawSessionKey": "victim", "runId": "vr"})
    assert status == 200, body
    return body["payload"]["artifacts"][0]["artifactRef"]


def test_native_tasks_of_another_session_or_run_are_refused(scene, bridge):
    for session, task in (("victim", {}), ("agent-s", {"runId": "vr"}), ("victim", {"runId": "agent-r"})):
        response = native(scene, session, taskId="t1", status="succeeded", **task)
        assert response.status_code == 403, response.content
        assert response.json()["error"]["code"] == "FORBIDDEN"
    assert not NativeTask.objects.exists()
    # Its own run, named or not, is recorded against the bound run.
    assert native(scene, "agent-s", taskId="t1", status="running").status_code == 201
    assert NativeTask.objects.get().run_id == "agent-r"
    # The victim's tasks.get shows no forged record.
    assert tasks_get(bridge, **VICTIM, includeArtifacts=False)["terminalSource"] == "session_prepare"


def test_an_agent_key_cannot_claim_an_unmapped_thread(scene, bridge):
    # Its session is mapped to another thread: CONFLICT, as for anyone.
    status, body = call(scene, "xworkmate.session.prepare", {"appThreadKey": "fresh", "openclawSessionKey": "x", "runId": "y"})
    assert status == 409 and body["error"]["code"] == "CONFLICT"
    # A key of a session the bridge has not mapped yet may not map one at all.
    _, token = api_key_create(name="lonely", scopes=["gateway:write"], binding=KeyBinding(session_key="lonely", run_id="r"))
    lonely = ApiClient(token)
    status, body = call(lonely, "xworkmate.session.prepare", {"appThreadKey": "fresh", "openclawSessionKey": "x", "runId": "y"})
    assert status == 403 and body["error"] == {
        "code": "FORBIDDEN",
        "message": "an agent key cannot map an app thread: the bridge maps it (session.prepare with its key)",
    }
    assert not SessionMapping.objects.filter(app_thread_key="fresh").exists()
    result = session_start(lonely, {"context": {"appThreadKey": "fresh", "openclawSessionKey": "x", "runId": "y"}})
    assert (result["prepared"], result["mapped"]) == (True, False)
    assert not SessionMapping.objects.filter(app_thread_key="fresh").exists()
    # The real session can still map it: nobody got there first.
    prepare(bridge, appThreadKey="fresh", openclawSessionKey="real", runId="r1")
    # Re-preparing its own, mapped run keeps the bridge's mapping as it is.
    before = SessionMapping.objects.get(app_thread_key="agent-thread").expected_artifact_dirs
    prepare(scene, appThreadKey="agent-thread", expectedArtifactDirs=["shared"])
    assert SessionMapping.objects.get(app_thread_key="agent-thread").expected_artifact_dirs == before


def test_gateway_methods_act_on_the_bound_run_whatever_the_body_names(scene, workspace):
    named = {**VICTIM, "workspaceDir": str(workspace / "elsewhere"), "expectedArtifactDirs": ["shared"]}
    for method in ("xworkmate.artifacts.export", "xworkmate.artifacts.list", "xworkmate.tasks.get"):
        status, body = call(scene, method, named)
        assert status == 200, (method, body)
        text = json.dumps(body)
        assert "the victim" not in text and "secret.md" not in text and "other.md" not in text
        assert body["payload"]["remoteWorkingDirectory"] == str(workspace) if method != "xworkmate.tasks.get" else True
    status, body = call(scene, "xworkmate.artifacts.read", {**named, "artifactScope": "tasks/victim/vr", "relativePath": "secret.md"})
    assert status == 400 and body["error"]["message"] == "artifactScope does not match sessionKey/runId"
    status, body = call(scene, "xworkmate.artifacts.collect-and-snapshot", named)
    assert status == 200 and body["payload"]["artifactScope"] == "tasks/agent-s/agent-r"
    assert not (workspace / "elsewhere/tasks/agent-s").exists()


def test_the_victims_ref_is_refused_on_read_download_and_tool(scene, bridge):
    ref = _victim_ref(bridge)
    status, body = call(scene, "xworkmate.artifacts.read", {**VICTIM, "artifactRef": ref})
    assert status == 400 and body["error"]["message"] == "artifactRef does not match sessionKey/runId"
    response = scene.client.get(
        "/api/artifacts/download", {"artifactRef": ref, **VICTIM}, headers=scene._headers()
    )
    assert response.status_code == 400 and "the victim" not in response.content.decode(errors="replace")
    response = scene.post("/api/artifacts/tool", {"action": "read", "artifactRef": ref})
    assert response.status_code == 400


def test_the_tool_ignores_workspace_and_fallback_dirs_from_the_agent(scene, workspace):
    (workspace / "tasks/agent-s/agent-r/mine.md").unlink()
    response = scene.post("/api/artifacts/tool", {"action": "list", "workspaceDir": str(workspace / "elsewhere"), "expectedArtifactDirs": ["shared"]})
    assert response.status_code == 200
    text = response.json()["content"][0]["text"]
    assert "other.md" not in text and "No artifacts found for this task run." in text


def test_agent_end_records_the_bound_run_only(scene):
    response = scene.post("/api/gateway/hooks/agent_end", {"event": {"success": True, "runId": "vr"}, "ctx": {"sessionKey": "victim"}})
    assert response.json()["recorded"] is True
    assert TaskRun.objects.get(session__session_key="victim").status == "running"
    assert TaskRun.objects.get(session__session_key="agent-s", run_id="agent-r").status == "completed"
