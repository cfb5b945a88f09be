"""`xworkmate.session.prepare` (contract §13.1, §18 B; D-A4, D-A5, D-A6, D-A7, D-A9, D-A19)."""

from __future__ import annotations

import base64

import pytest
from django.db import OperationalError, connections

from gateway import services
from gateway.models import SessionEntry, SessionMapping, TaskRun
from tests.gateway.conftest import call, db_state, prepare, tasks_get, tree
from xworkmate.services import KeyBinding, api_key_create

CONFLICT = "conflict: xworkmate session mapping already points to a different session"


def test_b11_it_executes_the_methods_against_the_current_task_scope(bridge, workspace):
    """Case B11: prepare, export, write, list, read, export of an unprepared run."""
    payload = prepare(bridge, appThreadKey="thread-main", openclawSessionKey="thread-main", runId="turn-1")
    assert payload["artifactScope"] == "tasks/thread-main/turn-1"
    scope = payload["artifactScope"]
    _, body = call(bridge, "xworkmate.artifacts.export", {"openclawSessionKey": "thread-main", "runId": "turn-1", "artifactScope": scope})
    assert body["payload"]["artifacts"] == [] and body["payload"]["warnings"] == []
    (workspace / scope / "reports").mkdir()
    (workspace / scope / "reports/final.md").write_text("# Done\n")
    _, body = call(bridge, "xworkmate.artifacts.list", {"openclawSessionKey": "thread-main", "runId": "turn-1", "artifactScope": scope})
    [listed] = body["payload"]["artifacts"]
    assert listed["relativePath"] == "reports/final.md" and "content" not in listed
    _, body = call(bridge, "xworkmate.artifacts.read", {"openclawSessionKey": "thread-main", "runId": "turn-1", "artifactScope": scope, "relativePath": "reports/final.md"})
    assert body["payload"]["artifacts"][0]["encoding"] == "base64"
    _, body = call(bridge, "xworkmate.artifacts.export", {"openclawSessionKey": "thread-main", "runId": "turn-unprepared"})
    assert body["payload"]["artifacts"] == []
    assert body["payload"]["warnings"] == ["artifact scope is not prepared for this task run"]


def test_it_answers_the_contract_payload_in_key_order(bridge, workspace):
    payload = prepare(bridge, appThreadKey="t1", openclawSessionKey="k1", runId="r1", expectedArtifactDirs=["reports"])
    assert list(payload) == [
        "runId", "sessionKey", "remoteWorkingDirectory", "remoteWorkspaceRefKind", "artifactScope",
        "scopeKind", "artifactDirectory", "relativeArtifactDirectory", "warnings",
        "expectedArtifactDirs", "expectedArtifactDirStatus", "mapping", "appThreadKey",
        "openclawSessionKey",
    ]
    assert payload["remoteWorkingDirectory"] == str(workspace)
    assert payload["artifactDirectory"] == str(workspace / "tasks/k1/r1")
    assert (workspace / "tasks/k1/r1").is_dir()
    assert payload["expectedArtifactDirs"] == ["reports/"]
    assert payload["expectedArtifactDirStatus"] == [{"relativePath": "reports/", "exists": False}]
    mapping = payload["mapping"]
    assert list(mapping) == ["schemaVersion", "appThreadKey", "openclawSessionKey", "expectedArtifactDirs", "createdAt", "updatedAt", "source"]
    assert mapping["source"] == "bridge_prepare" and mapping["createdAt"] == mapping["updatedAt"]
    assert mapping["createdAt"].endswith("Z") and len(mapping["createdAt"]) == 24
    run = TaskRun.objects.get()
    assert (run.run_id, run.status, run.success, run.completed_at) == ("r1", "running", False, None)


def test_b13_a_session_mapped_to_another_thread_is_a_conflict_and_writes_nothing(bridge, workspace):
    """Case B13 (after prepare t1/k1/r1)."""
    prepare(bridge, appThreadKey="t1", openclawSessionKey="k1", runId="r1")
    before, files = db_state(), tree(workspace)
    status, body = call(bridge, "xworkmate.session.prepare", {"appThreadKey": "t2", "openclawSessionKey": "k1", "runId": "r2"})
    assert status == 409
    assert body == {"ok": False, "error": {"code": "CONFLICT", "message": CONFLICT}}
    assert db_state() == before and tree(workspace) == files  # no run r2, no tasks/k1/r2


def test_it_refuses_a_thread_mapped_to_another_session(bridge, workspace):
    """The mapping is unique per thread too (issue 4 req 1): the second session gets CONFLICT."""
    prepare(bridge, appThreadKey="t1", openclawSessionKey="k1", runId="r1")
    before, files = db_state(), tree(workspace)
    status, body = call(bridge, "xworkmate.session.prepare", {"appThreadKey": "t1", "openclawSessionKey": "k2", "runId": "r1"})
    assert (status, body["error"]) == (409, {"code": "CONFLICT", "message": CONFLICT})
    assert db_state() == before and tree(workspace) == files  # not even the entry of k2


def test_b22_it_fails_closed_when_the_mapping_points_to_another_thread(bridge, workspace):
    """Case B22."""
    prepare(bridge, appThreadKey="draft:first", openclawSessionKey="draft:first", runId="r")
    status, body = call(bridge, "xworkmate.session.prepare", {"appThreadKey": "draft:second", "openclawSessionKey": "draft:first", "runId": "r"})
    assert status == 409 and "conflict" in body["error"]["message"]


def test_b14_d_a6_a_missing_run_id_writes_no_mapping(bridge, workspace):
    """Case B14 with D-A6: the original kept the mapping (Q4); here nothing is written."""
    status, body = call(bridge, "xworkmate.session.prepare", {"appThreadKey": "t3", "openclawSessionKey": "k3"})
    assert (status, body["error"]) == (400, {"code": "INVALID_REQUEST", "message": "runId required"})
    assert not SessionEntry.objects.exists() and not SessionMapping.objects.exists()
    assert tree(workspace) == []


def test_b16_it_reads_metadata_from_the_envelope_and_stores_no_request_ids(bridge, workspace):
    """Case B16."""
    payload = prepare(
        bridge,
        openclawSessionKey="k1",
        runId="r1",
        xworkmate={"appThreadKey": "t1", "expectedArtifactDirs": ["a"], "createdAt": "2026-01-01T00:00:00Z", "requestId": "rq", "taskId": "tk"},
    )
    mapping = payload["mapping"]
    assert {k: v for k, v in mapping.items() if k != "updatedAt"} == {
        "schemaVersion": 1, "appThreadKey": "t1", "openclawSessionKey": "k1",
        "expectedArtifactDirs": ["a/"], "createdAt": "2026-01-01T00:00:00Z", "source": "bridge_prepare",
    }
    stored = SessionMapping.objects.values().get()
    assert "rq" not in str(stored) and "tk" not in str(stored)
    # xworkmateMetadata is the other envelope name.
    payload = prepare(bridge, openclawSessionKey="k2", runId="r1", xworkmateMetadata={"appThreadKey": "t2"})
    assert payload["appThreadKey"] == "t2"


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"schemaVersion": 2}, "schemaVersion must be 1"),
        ({"schemaVersion": "2"}, "schemaVersion must be 1"),
        ({"schemaVersion": "x"}, "schemaVersion must be 1"),
        ({"appThreadKey": "<nil>"}, "appThreadKey required"),
        ({"appThreadKey": ["t"]}, "appThreadKey required"),
        ({"appThreadKey": None}, "appThreadKey required"),
        ({"openclawSessionKey": ""}, "openclawSessionKey required"),
        ({"openclawSessionKey": {"k": 1}}, "openclawSessionKey required"),
        ({"openclawSessionKey": 5}, "openclawSessionKey must be a string"),
        ({"workspaceDir": 123}, "workspaceDir must be a string"),
        ({"expectedArtifactDirs": "x"}, "expectedArtifactDirs must be an array of strings"),
        ({"runId": 7}, "runId required"),
        ({"runId": "   "}, "runId required"),
        ({"expectedArtifactDirs": ["../outside"]}, "expectedArtifactDir must stay inside the workspace"),
        ({"expectedArtifactDirs": ["tasks/other"]}, "expectedArtifactDir must stay outside task scopes"),
        ({"artifactScope": "tasks/k1"}, "artifactScope must be a task artifact scope"),
        ({"artifactScope": "tasks/k1/r2"}, "artifactScope does not match sessionKey/runId"),
        ({"artifactScope": "../x"}, "artifactScope must stay inside the workspace"),
        ({"workspaceDir": "/etc"}, "workspaceDir must be inside a configured workspace root"),
        ({"appThreadKey": "t" * 513}, "appThreadKey must be at most 512 characters"),
        ({"runId": "r" * 513}, "runId must be at most 512 characters"),
        ({"createdAt": "c" * 65}, "createdAt must be at most 64 characters"),
    ],
)
def test_b17_bad_input_gets_the_contract_error_and_changes_nothing(bridge, workspace, params, message):
    """Cases B17/B20 and the issue's bad-input list: D-A6, nothing partially written."""
    prepare(bridge, appThreadKey="t0", openclawSessionKey="k0", runId="r0")  # existing state
    before, files = db_state(), tree(workspace)
    status, body = call(bridge, "xworkmate.session.prepare", {"appThreadKey": "t1", "openclawSessionKey": "k1", "runId": "r1", **params})
    assert status == 400
    assert body == {"ok": False, "error": {"code": "INVALID_REQUEST", "message": message}}
    assert db_state() == before and tree(workspace) == files


def test_b17_schema_version_one_as_text_and_numeric_thread_keys_are_accepted(bridge, workspace):
    """Case B17."""
    payload = prepare(bridge, schemaVersion="1", appThreadKey=42, openclawSessionKey="k1", runId="r1")
    assert payload["appThreadKey"] == "42" and payload["mapping"]["appThreadKey"] == "42"


def test_b19_d_a5_a_missing_workspace_named_conflict_is_not_a_conflict(bridge, workspace):
    """Case B19 fixed by D-A5 (and D-A9: the path lies inside the configured root)."""
    missing = workspace / "nope" / "conflict"
    status, body = call(bridge, "xworkmate.session.prepare", {"appThreadKey": "t1", "openclawSessionKey": "k1", "runId": "r1", "workspaceDir": str(missing)})
    assert status == 400
    assert body["error"] == {"code": "INVALID_REQUEST", "message": f"ENOENT: no such file or directory, realpath '{missing}'"}
    assert not SessionEntry.objects.exists()


def test_b20_a_legacy_session_key_without_app_thread_is_refused(bridge, workspace):
    """Case B20."""
    status, body = call(bridge, "xworkmate.session.prepare", {"schemaVersion": 1, "sessionKey": "draft:legacy", "expectedArtifactDirs": ["artifacts/"]})
    assert (status, body["error"]["message"]) == (400, "appThreadKey required")


def test_b23_tasks_get_after_prepare_reports_the_running_run(bridge, workspace):
    """Case B23."""
    prepare(bridge, appThreadKey="t1", openclawSessionKey="k1", runId="r1")
    (workspace / "tasks/k1/r1/a.txt").write_text("a")
    payload = tasks_get(bridge, appThreadKey="t1", runId="r1")
    assert (payload["success"], payload["status"], payload["taskStatus"]) == (True, "running", "running")
    assert (payload["terminal"], payload["terminalSource"]) == (False, "session_prepare")
    assert payload["task"]["source"] == "xworkmate_run_state" and payload["task"]["success"] is False
    assert [a["relativePath"] for a in payload["artifacts"]] == ["a.txt"]


def test_q5_d_a7_re_prepare_resets_dirs_and_the_run_but_keeps_created_at_and_source(bridge, workspace):
    first = prepare(bridge, appThreadKey="t1", openclawSessionKey="k1", runId="r1", expectedArtifactDirs=["reports"], createdAt="2026-01-01T00:00:00Z")
    bridge.post("/api/gateway/hooks/agent_end", {"event": {"runId": "r1", "success": False, "error": "boom"}, "ctx": {"sessionKey": "k1"}})
    assert TaskRun.objects.get().status == "failed"
    again = prepare(bridge, appThreadKey="t1", openclawSessionKey="k1", runId="r1")
    assert again["expectedArtifactDirs"] == [] and again["mapping"]["expectedArtifactDirs"] == []
    assert again["mapping"]["createdAt"] == "2026-01-01T00:00:00Z"
    assert again["mapping"]["source"] == "bridge_prepare"
    assert again["mapping"]["updatedAt"] >= first["mapping"]["updatedAt"]
    run = TaskRun.objects.get()
    assert (run.status, run.error, run.completed_at) == ("running", "", None)


def test_it_refuses_outsiders_and_readers(bridge, workspace, outsider, reader, anonymous):
    params = {"appThreadKey": "t1", "openclawSessionKey": "k1", "runId": "r1"}
    assert anonymous.post("/gateway/xworkmate.session.prepare", params).status_code == 401
    assert outsider.post("/gateway/xworkmate.session.prepare", params).status_code == 403
    assert outsider.post("/gateway/xworkmate.tasks.get", params).status_code == 403
    assert reader.post("/gateway/xworkmate.session.prepare", params).status_code == 403
    assert not SessionEntry.objects.exists() and tree(workspace) == []
    assert reader.post("/gateway/xworkmate.tasks.get", params).status_code == 200


def test_a_bound_agent_key_works_on_its_own_run_whatever_the_params_say(db, workspace):
    """§13.0 (the original's test 123): the key's session and run override the params."""
    from tests.conftest import ApiClient

    _, token = api_key_create(name="agent", scopes=["gateway:write"], binding=KeyBinding(session_key="k1", run_id="r1"))
    agent = ApiClient(token)
    bridge_token = api_key_create(name="the-bridge", scopes=["gateway:write"])[1]
    prepare(ApiClient(bridge_token), appThreadKey="t1", openclawSessionKey="k1", runId="r0")
    payload = prepare(agent, appThreadKey="t1", openclawSessionKey="evil", runId="other")
    assert (payload["openclawSessionKey"], payload["runId"], payload["artifactScope"]) == ("k1", "r1", "tasks/k1/r1")
    assert not (workspace / "tasks/evil").exists()
    got = tasks_get(agent, openclawSessionKey="evil", runId="other", includeArtifacts=False)
    assert (got["openclawSessionKey"], got["runId"]) == ("k1", "r1")
    (workspace / "tasks/k1/r1/x.md").write_text("x")
    _, body = call(agent, "xworkmate.artifacts.read", {"openclawSessionKey": "evil", "runId": "other", "relativePath": "x.md", "artifactScope": "tasks/k1/r1"})
    assert base64.b64decode(body["payload"]["artifacts"][0]["content"]) == b"x"


@pytest.mark.django_db(transaction=True)
def test_d_a19_a_prepare_whose_commit_fails_leaves_no_directory_but_keeps_a_committed_runs(
    bridge, workspace, monkeypatch
):
    """D-A19: the database goes at COMMIT, after the scope directory was made.

    Nothing is committed, and the directory the prepare made goes too: else it is
    an orphan, a scope with no run. A scope an earlier, committed prepare of the
    run made stays, with what the agent wrote into it.
    """
    prepare(bridge, appThreadKey="t1", openclawSessionKey="k1", runId="r1")
    (workspace / "tasks/k1/r1/out.txt").write_text("the agent's")
    committed, files = db_state(), tree(workspace)
    real_create = services.create_prepared_scope
    wrapper = connections["default"]  # the test client's requests run on this thread's connection
    real_commit = wrapper.commit
    fail: list[bool] = []

    def commit() -> None:
        if fail:
            fail.clear()
            raise OperationalError("server closed the connection unexpectedly")
        real_commit()

    def then_commit_fails(plan):
        prepared = real_create(plan)
        fail.append(True)  # this prepare's COMMIT, only
        return prepared

    monkeypatch.setattr(wrapper, "commit", commit)
    monkeypatch.setattr(services, "create_prepared_scope", then_commit_fails)
    for thread, session, run in (("t2", "k2", "r2"), ("t1", "k1", "r3"), ("t1", "k1", "r1")):
        status, body = call(bridge, "xworkmate.session.prepare",
                            {"appThreadKey": thread, "openclawSessionKey": session, "runId": run})
        assert (status, body["error"]["code"]) == (503, "UNAVAILABLE"), body
    assert db_state() == committed
    # tasks/k2 itself may stay (a session's folder is shared by its runs); no run's scope does.
    assert [f for f in tree(workspace) if f != "tasks/k2"] == files
