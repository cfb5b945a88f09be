"""`xworkmate.tasks.get` (contract §13.2, §18 C; D-A1, D-A7)."""

from __future__ import annotations

import logging

import pytest
from django.db import DatabaseError

from tests.conftest import ApiClient
from tests.gateway.conftest import call, db_state, native, prepare, tasks_get
from xworkmate.services import KeyBinding, api_key_create

NATIVE_ORDER = [
    "success", "status", "taskStatus", "mode", "mapping", "appThreadKey", "openclawSessionKey",
    "runId", "taskId", "task", "expectedArtifactDirs", "artifactScope", "remoteWorkingDirectory",
    "remoteWorkspaceRefKind", "scopeKind", "artifacts", "constraintSatisfied",
    "missingRequiredExtensions", "warnings", "artifactCount",
]


def test_c25_d_a1_a_completed_native_task_is_completed(bridge, workspace):
    """Case C25 (D-A1: `completed` maps like `succeeded`)."""
    prepare(bridge, appThreadKey="t1", openclawSessionKey="k1", runId="r1")
    assert native(bridge, "k1", taskId="task-1", runId="r1", status="completed").status_code == 201
    payload = tasks_get(bridge, openclawSessionKey="k1", runId="r1")
    assert (payload["status"], payload["taskStatus"], payload["success"]) == ("completed", "completed", True)
    assert list(payload) == NATIVE_ORDER
    assert payload["task"] == {"taskId": "task-1", "runId": "r1", "status": "completed"}
    assert (payload["runId"], payload["taskId"]) == ("r1", "task-1")


@pytest.mark.parametrize(
    ("native_status", "status", "task_status"),
    [
        ("succeeded", "completed", "succeeded"),
        ("failed", "failed", "failed"),
        ("timed_out", "failed", "timed_out"),
        ("cancelled", "failed", "cancelled"),
        ("lost", "failed", "lost"),
        ("queued", "running", "queued"),
        ("running", "running", "running"),
    ],
)
def test_c26_q7_native_statuses_map_and_success_stays_true(bridge, workspace, native_status, status, task_status):
    """Case C26 (Q7, D-A7: success is true even for a failed native task)."""
    native(bridge, "k1", taskId="r1", status=native_status)
    payload = tasks_get(bridge, openclawSessionKey="k1", runId="r1", includeArtifacts=False)
    assert (payload["status"], payload["taskStatus"], payload["success"]) == (status, task_status, True)
    # Without artifacts the export's optional keys are absent, never null.
    assert "artifactScope" not in payload and "constraintSatisfied" not in payload
    assert payload["artifacts"] == [] and payload["warnings"] == [] and payload["artifactCount"] == 0


def test_c28_without_ids_the_latest_native_task_is_used(bridge, workspace):
    """Case C28: findLatest; the export runs for tasks/<k>/<taskId>."""
    native(bridge, "k", taskId="old", status="failed")
    native(bridge, "k", taskId="L", status="succeeded")
    payload = tasks_get(bridge, openclawSessionKey="k")
    assert (payload["runId"], payload["taskId"], payload["status"], payload["appThreadKey"]) == ("", "L", "completed", "")
    assert "mapping" not in payload
    assert payload["artifactScope"] == "tasks/k/L"
    assert payload["warnings"] == ["artifact scope is not prepared for this task run"]


def test_c29_artifacts_without_any_task_record_are_unknown_evidence(bridge, workspace):
    """Case C29."""
    prepare(bridge, appThreadKey="draft:sample-task", openclawSessionKey="agent:main:draft:sample-task", runId="turn-other")
    scope = workspace / "tasks/agent_main_draft_sample-task/turn-sample"
    scope.mkdir(parents=True)
    (scope / "series.config.json").write_text("{}")
    payload = tasks_get(bridge, appThreadKey="draft:sample-task", openclawSessionKey="agent:main:draft:sample-task", runId="turn-sample")
    assert (payload["success"], payload["status"], payload["taskStatus"], payload["evidence"]) == (False, "unknown", "unknown", "artifacts_present")
    assert payload["task"] == {"taskId": "turn-sample", "runId": "turn-sample", "status": "unknown", "source": "artifact_fallback"}
    assert [(a["relativePath"], a["contentType"]) for a in payload["artifacts"]] == [("series.config.json", "application/json")]
    assert payload["artifactCount"] == 1
    assert payload["warnings"][-1] == (
        "Native OpenClaw task record was unavailable for agent:main:draft:sample-task; "
        "artifacts are present but task status is unknown."
    )


def test_c31_no_ids_and_no_native_task_is_task_not_found_with_the_mapping(bridge, workspace):
    """Case C31."""
    prepare(bridge, appThreadKey="t1", openclawSessionKey="k1", runId="r1", expectedArtifactDirs=["out"])
    payload = tasks_get(bridge, openclawSessionKey="k1")
    assert list(payload) == ["ok", "code", "message", "mapping", "expectedArtifactDirs"]
    assert (payload["ok"], payload["code"], payload["message"]) == (False, "task_not_found", "No native OpenClaw task record found for k1")
    assert payload["expectedArtifactDirs"] == ["out/"]


def test_c32_c34_lookup_needs_a_session_or_thread_and_session_key_is_no_alias(bridge, workspace):
    """Cases C32 and C34."""
    assert tasks_get(bridge, runId="x") == {"ok": False, "code": "invalid_lookup", "message": "openclawSessionKey or appThreadKey required"}
    native(bridge, "draft:legacy", taskId="run-1", status="running")
    payload = tasks_get(bridge, sessionKey="draft:legacy", runId="run-1", includeArtifacts=False)
    assert (payload["ok"], payload["code"]) == (False, "invalid_lookup")


def test_c35_it_finds_the_mapping_by_app_thread(bridge, workspace):
    """Case C35 (and mapping_not_found for an unknown thread)."""
    prepare(bridge, appThreadKey="draft:lookup", openclawSessionKey="draft:lookup", runId="run-1")
    payload = tasks_get(bridge, appThreadKey="draft:lookup", runId="run-1", includeArtifacts=False)
    assert (payload["success"], payload["appThreadKey"], payload["openclawSessionKey"]) == (True, "draft:lookup", "draft:lookup")
    assert tasks_get(bridge, appThreadKey="nobody", runId="run-1") == {
        "ok": False, "code": "mapping_not_found", "message": "No OpenClaw session mapping found for nobody",
    }


def test_c37_a_running_recorded_run(bridge, workspace):
    """Case C37."""
    prepare(bridge, appThreadKey="t", openclawSessionKey="k", runId="turn-running")
    payload = tasks_get(bridge, openclawSessionKey="k", runId="turn-running", includeArtifacts=False)
    assert (payload["success"], payload["status"], payload["terminal"], payload["terminalSource"]) == (True, "running", False, "session_prepare")
    assert {k: payload["task"][k] for k in ("runId", "status", "source")} == {"runId": "turn-running", "status": "running", "source": "xworkmate_run_state"}
    assert "completedAt" not in payload["task"] and "output" not in payload and "message" not in payload


def test_c38_export_errors_fail_the_call_and_without_artifacts_it_is_no_record(bridge, workspace):
    """Case C38 (the workspace is inside the configured root but missing)."""
    missing = workspace / "nonexistent" / "x"
    status, body = call(bridge, "xworkmate.tasks.get", {"openclawSessionKey": "zz", "runId": "r", "workspaceDir": str(missing)})
    assert status == 400
    assert body["error"] == {"code": "INVALID_REQUEST", "message": f"ENOENT: no such file or directory, realpath '{missing}'"}
    payload = tasks_get(bridge, openclawSessionKey="zz", runId="r", workspaceDir=str(missing), includeArtifacts=False)
    assert payload == {"ok": False, "code": "no_native_task_record", "message": "No native OpenClaw task record found for zz"}


def test_c40_the_mapping_dirs_win_over_the_param_dirs(bridge, workspace):
    """Case C40."""
    prepare(bridge, appThreadKey="t", openclawSessionKey="k", runId="r", expectedArtifactDirs=["exports/"])
    (workspace / "reports").mkdir()
    (workspace / "reports/x.md").write_text("x")
    payload = tasks_get(bridge, openclawSessionKey="k", runId="r", expectedArtifactDirs=["reports"])
    assert payload["artifacts"] == [] and payload["expectedArtifactDirs"] == ["exports/"]


def test_it_looks_a_task_up_by_task_id_and_by_run_id(bridge, workspace):
    native(bridge, "k", taskId="task-9", runId="run-9", status="running")
    assert tasks_get(bridge, openclawSessionKey="k", taskId="task-9", includeArtifacts=False)["taskStatus"] == "running"
    by_run = tasks_get(bridge, openclawSessionKey="k", runId="run-9", includeArtifacts=False)
    assert (by_run["taskId"], by_run["runId"]) == ("task-9", "run-9")
    other = tasks_get(bridge, openclawSessionKey="other", runId="run-9", includeArtifacts=False)
    assert other["code"] == "no_native_task_record"  # bound to its own session


def test_a_native_task_without_any_run_id_cannot_export(bridge, workspace):
    """§13.2 A: export needs runId || task.runId || task.taskId; the record has a task id."""
    native(bridge, "k", taskId="L", status="running")
    assert tasks_get(bridge, openclawSessionKey="k")["artifactScope"] == "tasks/k/L"


def test_it_logs_a_failing_native_lookup_and_falls_back(bridge, workspace, monkeypatch, caplog):
    prepare(bridge, appThreadKey="t", openclawSessionKey="k", runId="r")

    def broken(session_key, token):
        raise DatabaseError("registry down")

    monkeypatch.setattr("gateway.methods.tasks_get.native_task_lookup", broken)
    with caplog.at_level(logging.WARNING, logger="xworkmate.gateway"):
        payload = tasks_get(bridge, openclawSessionKey="k", runId="r", includeArtifacts=False)
    assert payload["terminalSource"] == "session_prepare"
    assert "xworkmate native task lookup failed: sessionKey=k error=Error: registry down" in caplog.text


def test_numbers_are_accepted_as_task_ids(bridge, workspace):
    """taskState's optionalString: numbers print as JavaScript prints them (the ids, not the
    session key: D-A18)."""
    native(bridge, "7", taskId="42", status="queued")
    payload = tasks_get(bridge, openclawSessionKey="7", taskId=42.0, includeArtifacts=False)
    assert (payload["openclawSessionKey"], payload["taskId"], payload["status"]) == ("7", "42", "running")


@pytest.mark.parametrize("key", [7, 7.0, 0, True, False, None, {"k": "7"}, ["7"], []])
@pytest.mark.parametrize("with_thread", [False, True])
def test_it_refuses_a_session_key_that_is_not_a_string_naming_the_field(bridge, workspace, key, with_thread):
    """D-A18: `7` is not the session "7", and null is not "no key"; the lookup reads and
    writes nothing, whatever else the params would have found."""
    prepare(bridge, appThreadKey="t", openclawSessionKey="7", runId="r")
    native(bridge, "7", taskId="r", status="queued")
    before = db_state()
    params = {"openclawSessionKey": key, "runId": "r", **({"appThreadKey": "t"} if with_thread else {})}
    status, body = call(bridge, "xworkmate.tasks.get", params)
    assert (status, body) == (
        400,
        {"ok": False, "error": {"code": "INVALID_REQUEST", "message": "openclawSessionKey must be a string"}},
    )
    assert db_state() == before


def test_an_agent_key_s_session_key_is_its_own_whatever_it_sends(bridge, workspace):
    """§13.0 comes first: an agent key's params carry its bound session, so its 7 is never read."""
    prepare(bridge, appThreadKey="t", openclawSessionKey="k", runId="r")
    binding = KeyBinding(session_key="k", run_id="r")
    agent = ApiClient(api_key_create(name="agent", scopes=["gateway:read"], binding=binding)[1])
    payload = tasks_get(agent, openclawSessionKey=7, runId="r", includeArtifacts=False)
    assert (payload["openclawSessionKey"], payload["status"]) == ("k", "running")


def test_a_deleted_workspace_still_answers_the_recorded_status_with_a_warning(bridge, workspace):
    """Issue 9 §4: the run's record outlives its files; the manifest is what is missing."""
    import shutil

    team = workspace / "team"
    team.mkdir()
    prepare(bridge, appThreadKey="t", openclawSessionKey="k", runId="r", workspaceDir=str(team))
    shutil.rmtree(team)
    payload = tasks_get(bridge, openclawSessionKey="k", runId="r", workspaceDir=str(team))
    assert (payload["status"], payload["terminalSource"], payload["artifacts"]) == ("running", "session_prepare", [])
    assert payload["warnings"] == [f"artifacts unavailable: ENOENT: no such file or directory, realpath '{team}'"]
    team.write_text("a file now")
    payload = tasks_get(bridge, openclawSessionKey="k", runId="r", workspaceDir=str(team))
    assert payload["warnings"] == ["artifacts unavailable: workspaceDir must be a directory"]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"maxFiles": True}, "maxFiles must be a number"),
        ({"sinceUnixMs": "soon"}, "sinceUnixMs must be a number"),
        ({"workspaceDir": 5}, "workspaceDir must be a string"),
        ({"expectedArtifactDirs": "reports"}, "expectedArtifactDirs must be an array of strings"),
    ],
)
@pytest.mark.parametrize(
    "lookup",
    [
        {},  # no session: the lookup error invalid_lookup
        {"openclawSessionKey": "k"},  # no run: no manifest to build
        {"openclawSessionKey": "k", "runId": "r", "includeArtifacts": False},
    ],
)
def test_a_bad_option_is_refused_whether_or_not_a_manifest_is_built(bridge, workspace, lookup, params, message):
    """The schema types every option; a wrong type is refused, not ignored for want of a manifest."""
    status, body = call(bridge, "xworkmate.tasks.get", {**lookup, **params})
    assert (status, body["error"]) == (400, {"code": "INVALID_REQUEST", "message": message})
