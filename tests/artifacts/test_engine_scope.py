"""Scope naming, workspace resolution, expected dirs, coercion (§3-§7, §18 A)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from artifacts.engine import (
    ArtifactMissingError,
    PreparedScope,
    PreparePlan,
    create_prepared_scope,
    discard_prepared_scope,
    export_artifacts,
    prepare_artifact_scope,
    safe_scope_segment,
    validate_prepare_params,
)
from artifacts.engine.coerce import js_number, js_parse_int, positive_integer
from artifacts.engine.paths import (
    is_within_root,
    normalize_expected_artifact_dirs,
    safe_input_relative_path,
)
from artifacts.engine.scope import discard_scope
from tests.artifacts.engine_support import ids, make_workspace, settings_for, tree_state
from xworkmate.lib.errors import ConflictError, InputError


def test_case_1_prepares_isolated_task_artifact_scopes(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    config = settings_for(workspace)
    first = prepare_artifact_scope(ids("thread-main", "turn-1"), config)
    second = prepare_artifact_scope(ids("thread-main", "turn-2"), config)
    assert first["artifactScope"] == "tasks/thread-main/turn-1"
    assert second["artifactScope"] == "tasks/thread-main/turn-2"
    for payload in (first, second):
        assert Path(str(payload["artifactDirectory"])).is_dir()
        assert payload["remoteWorkingDirectory"] == os.path.realpath(workspace)
        assert payload["scopeKind"] == "task"
    assert list(first) == [
        "runId",
        "sessionKey",
        "remoteWorkingDirectory",
        "remoteWorkspaceRefKind",
        "artifactScope",
        "scopeKind",
        "artifactDirectory",
        "relativeArtifactDirectory",
        "warnings",
        "expectedArtifactDirs",
        "expectedArtifactDirStatus",
    ]
    assert first["relativeArtifactDirectory"] == "tasks/thread-main/turn-1"
    assert first["warnings"] == []


def test_case_2_rejects_legacy_session_key_params(tmp_path: Path) -> None:
    config = settings_for(make_workspace(tmp_path))
    for call in (prepare_artifact_scope, export_artifacts):
        with pytest.raises(InputError, match=r"^openclawSessionKey required$"):
            call({"sessionKey": "thread-main", "runId": "turn-1"}, config)


def test_run_id_is_checked_before_session_key(tmp_path: Path) -> None:
    config = settings_for(make_workspace(tmp_path))
    with pytest.raises(InputError, match=r"^runId required$"):
        export_artifacts({}, config)


@pytest.mark.parametrize(
    ("value", "segment"),
    [
        ("agent:main:draft:thread-main", "agent_main_draft_thread-main"),
        ("  ../x  ", "x"),
        ("...", "scope"),
        ("任务", "scope"),
        ("__a__", "a"),
        ("a/b\\c", "a_b_c"),
        ("-x-", "x"),
        ("draft:1779524982823421-3", "draft_1779524982823421-3"),
        ("a" * 95 + "_b" + "c" * 10, "a" * 95 + "_"),
    ],
)
def test_case_4_segment_table(value: str, segment: str) -> None:
    assert safe_scope_segment(value) == segment


def test_case_7_rejects_unsafe_expected_artifact_directories(tmp_path: Path) -> None:
    config = settings_for(make_workspace(tmp_path))
    with pytest.raises(InputError, match=r"^expectedArtifactDir must stay inside the workspace$"):
        prepare_artifact_scope(ids(expectedArtifactDirs=["../outside"]), config)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (["", 5, None, "x", "x/", " x ", "y"], ["x/", "y/"]),
        (["a//b\\c"], ["a/b/c/"]),
        (["\\\\server\\share"], ["server/share/"]),
        (None, []),
    ],
)
def test_case_8_expected_dir_normalization(value: object, expected: list[str]) -> None:
    assert normalize_expected_artifact_dirs(value) == expected


@pytest.mark.parametrize("value", [["C:\\x"], ["a/./b"], ["/x"], ["ok", "x\0y"]])
def test_case_8_expected_dir_rejections(value: object) -> None:
    with pytest.raises(InputError, match=r"^expectedArtifactDir must stay inside the workspace$"):
        normalize_expected_artifact_dirs(value)


@pytest.mark.parametrize("value", [["tasks"], ["tasks/s/r"], ["Tasks/other"], ["./tasks"]])
def test_d_a4_expected_dir_inside_tasks_rejected(tmp_path: Path, value: list[str]) -> None:
    workspace = make_workspace(tmp_path)
    before = tree_state(workspace)
    message = (
        "expectedArtifactDir must stay inside the workspace"
        if value == ["./tasks"]
        else "expectedArtifactDir must stay outside task scopes"
    )
    with pytest.raises(InputError, match=rf"^{message}$"):
        prepare_artifact_scope(ids(expectedArtifactDirs=value), settings_for(workspace))
    assert tree_state(workspace) == before


@pytest.mark.parametrize("value", [["reports/tasks"], ["nested/Tasks/x"], ["tasks"]])
def test_d_a4_a_tasks_part_at_any_depth_is_refused(value: object) -> None:
    """A nested workspace has its own tasks/: no part of an expected dir may be one."""
    with pytest.raises(InputError, match=r"^expectedArtifactDir must stay outside task scopes$"):
        normalize_expected_artifact_dirs(value)


@pytest.mark.parametrize(("value", "message"), [
    ("x", "expectedArtifactDirs must be an array of strings"),
    ({"a": 1}, "expectedArtifactDirs must be an array of strings"),
    (["d"] * 32769, "expectedArtifactDirs must have at most 32768 entries"),
])
def test_a_wrong_type_or_too_many_expected_dirs_is_refused(value: object, message: str) -> None:
    with pytest.raises(InputError, match=f"^{message}$"):
        normalize_expected_artifact_dirs(value)


def test_many_expected_dirs_are_de_duplicated_in_order() -> None:
    entries = [f"d{i % 1000}" for i in range(30000)]
    result = normalize_expected_artifact_dirs(entries)
    assert result == [f"d{i}/" for i in range(1000)]


@pytest.mark.parametrize(
    ("scope", "result"),
    [
        ("tasks/s1", "artifactScope must be a task artifact scope"),
        ("other/s1/r1", "artifactScope must be a task artifact scope"),
        ("../outside", "artifactScope must stay inside the workspace"),
        ("/tasks/s1/r1", "artifactScope must stay inside the workspace"),
        ("tasks/../x/y", "artifactScope must stay inside the workspace"),
        ("tasks/s1/r2", "artifactScope does not match sessionKey/runId"),
        ("tasks//s1/r1/", "tasks/s1/r1"),
        ("tasks\\s1\\r1", "tasks/s1/r1"),
    ],
)
def test_case_10_artifact_scope_validation(tmp_path: Path, scope: str, result: str) -> None:
    workspace = make_workspace(tmp_path)
    config = settings_for(workspace)
    if result.startswith("tasks/"):
        payload = export_artifacts(ids(artifactScope=scope), config)
        assert payload["artifactScope"] == result
        return
    before = tree_state(workspace)
    with pytest.raises(InputError, match=rf"^{result}$"):
        export_artifacts(ids(artifactScope=scope, sinceUnixMs=5), config)
    assert tree_state(workspace) == before


# --- workspace resolution: D-A9, D-A13, D-A5 ------------------------------------------


def test_d_a9_workspace_outside_configured_roots_rejected(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    config = settings_for(workspace)
    for candidate in (str(other), "/nope/missing", str(workspace / ".." / "other"), "/"):
        with pytest.raises(InputError, match=r"^workspaceDir must be inside a configured"):
            export_artifacts(ids(workspaceDir=candidate), config)


def test_d_a9_subdirectory_of_a_root_is_accepted(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    (workspace / "team" / "a").mkdir(parents=True)
    second = tmp_path / "second"
    second.mkdir()
    config = settings_for(workspace, workspace_roots=(str(workspace), str(second)))
    payload = export_artifacts(ids(workspaceDir=str(workspace / "team" / "a")), config)
    assert payload["remoteWorkingDirectory"] == str(workspace / "team" / "a")
    payload = export_artifacts(ids(workspaceDir=str(second)), config)
    assert payload["remoteWorkingDirectory"] == str(second)
    assert export_artifacts(ids(), config)["remoteWorkingDirectory"] == str(workspace)


def test_d_a9_symlink_inside_root_resolving_outside_rejected(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "escape").symlink_to(outside)
    with pytest.raises(InputError, match=r"^workspaceDir must be inside a configured"):
        export_artifacts(ids(workspaceDir=str(workspace / "escape")), settings_for(workspace))


def test_d_a13_missing_workspace_inside_root_keeps_enoent_wording(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    missing = workspace / "nope"
    with pytest.raises(ArtifactMissingError) as caught:
        export_artifacts(ids(workspaceDir=str(missing)), settings_for(workspace))
    assert caught.value.message == f"ENOENT: no such file or directory, realpath '{missing}'"
    assert caught.value.code == "INVALID_REQUEST"


def test_case_38_configured_missing_workspace_is_enoent(tmp_path: Path) -> None:
    config = settings_for(tmp_path, workspace_roots=("/nonexistent/x",))
    with pytest.raises(InputError) as caught:
        export_artifacts(ids("zz", "r"), config)
    assert str(caught.value) == "ENOENT: no such file or directory, realpath '/nonexistent/x'"


def test_d_a5_case_19_enoent_with_conflict_in_path_is_not_conflict(tmp_path: Path) -> None:
    """Case 19 / Q3 fixed: the code comes from the error type, not the message text."""
    config = settings_for(tmp_path, workspace_roots=("/nope/conflict",))
    with pytest.raises(InputError) as caught:
        prepare_artifact_scope(ids("k9", "r9"), config)
    assert not isinstance(caught.value, ConflictError)
    assert caught.value.code == "INVALID_REQUEST"
    assert caught.value.message == "ENOENT: no such file or directory, realpath '/nope/conflict'"
    assert ConflictError("conflict: x").code == "CONFLICT"


def test_d_a6_prepare_validation_writes_nothing(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    config = settings_for(workspace)
    before = tree_state(workspace)
    bad_params: list[dict[str, object]] = [
        {"runId": "r1"},
        ids(artifactScope="tasks/s1/r2"),
        ids(expectedArtifactDirs=["../x"]),
        ids(workspaceDir="/elsewhere"),
    ]
    for params in bad_params:
        with pytest.raises(InputError):
            validate_prepare_params(params, config)
        with pytest.raises(InputError):
            prepare_artifact_scope(params, config)
    assert tree_state(workspace) == before
    plan = validate_prepare_params(ids(), config)
    assert plan.scope_root == str(workspace / "tasks" / "s1" / "r1")
    assert tree_state(workspace) == before


def test_prepare_refuses_a_symlinked_scope_parent(tmp_path: Path) -> None:
    """A writer must never follow a symlink out of the workspace."""
    workspace = make_workspace(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "tasks").symlink_to(outside)
    with pytest.raises(InputError, match=r"^artifactScope must stay inside the workspace$"):
        prepare_artifact_scope(ids(), settings_for(workspace))
    assert list(outside.iterdir()) == []


def test_prepare_reports_expected_dir_status(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    (workspace / "reports").mkdir()
    payload = prepare_artifact_scope(
        ids(expectedArtifactDirs=["reports", "missing/"]), settings_for(workspace)
    )
    assert payload["expectedArtifactDirs"] == ["reports/", "missing/"]
    assert payload["expectedArtifactDirStatus"] == [
        {"relativePath": "reports/", "exists": True},
        {"relativePath": "missing/", "exists": False},
    ]


# --- coercion: D-A8 -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "number"),
    [("10", 10), (" 7 ", 7), ("", 0), ("0x10", 16), ("1e3", 1000), (5, 5), (0.5, 0.5)],
)
def test_js_number_on_numeric_input(value: object, number: float) -> None:
    assert js_number(value) == number


def test_js_parse_int() -> None:
    assert js_parse_int("2abc") == 2
    assert js_parse_int(" 1.7") == 1


@pytest.mark.parametrize("field", ["maxFiles", "maxInlineBytes", "sinceUnixMs"])
@pytest.mark.parametrize("value", [True, None, [5], {"n": 1}, "abc"])
def test_d_a8_non_numeric_options_rejected(tmp_path: Path, field: str, value: object) -> None:
    workspace = make_workspace(tmp_path)
    before = tree_state(workspace)
    with pytest.raises(InputError, match=rf"^{field} must be a number$"):
        export_artifacts({**ids(), field: value}, settings_for(workspace))
    assert tree_state(workspace) == before


def test_d_a8_numbers_and_numeric_strings_coerce_as_in_the_original() -> None:
    assert positive_integer("1", "maxFiles", 64, 64) == 1
    assert positive_integer(0, "maxFiles", 1, 64) == 1
    assert positive_integer(0.5, "maxFiles", 64, 64) == 0
    assert positive_integer(-3, "maxFiles", 0, 64) == 64


# --- hypothesis: a relative path resolves inside the scope or is refused -------------------

_PATH_ALPHABET = st.sampled_from(["a", "b", ".", "..", "/", "\\", "\0", ":", "C:", " ", "~", "é"])


@settings(max_examples=400, deadline=None)
@given(st.lists(_PATH_ALPHABET, max_size=12).map("".join))
def test_any_relative_path_stays_inside_the_scope_or_is_refused(raw: str) -> None:
    scope_root = "/w/tasks/s/r"
    try:
        relative = safe_input_relative_path(raw, "relativePath")
    except InputError as error:
        assert error.message in (
            "relativePath required",
            "relativePath must stay inside the workspace",
        )
        return
    joined = os.path.normpath(os.path.join(scope_root, relative))
    assert is_within_root(scope_root, joined)
    assert joined != scope_root
    assert "\0" not in relative and "\\" not in relative


# --- D-A19: a prepare that did not commit takes back the scope it made ------------------------


def _prepared(workspace: Path, session: str = "s1", run: str = "r1") -> tuple[PreparePlan, PreparedScope]:
    plan = validate_prepare_params(ids(session, run), settings_for(workspace))
    return plan, create_prepared_scope(plan)


def test_d_a19_the_scope_a_prepare_made_goes_when_it_does_not_commit(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    plan, prepared = _prepared(workspace)
    assert prepared.created and (workspace / "tasks/s1/r1/.xworkmate/owner.json").is_file()
    discard_prepared_scope(plan, prepared)
    # The session's folder stays: other runs of the session (or of its name) use it.
    assert sorted(tree_state(workspace)) == ["tasks", "tasks/s1"]


def test_d_a19_a_scope_an_earlier_prepare_made_stays(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    _prepared(workspace)  # the committed run's
    plan, again = _prepared(workspace)
    assert not again.created
    before = tree_state(workspace)
    discard_prepared_scope(plan, again)
    assert tree_state(workspace) == before


@pytest.mark.parametrize("intruder", ["out.txt", ".xworkmate/note"])
def test_d_a19_a_scope_with_anything_else_in_it_stays(tmp_path: Path, intruder: str) -> None:
    workspace = make_workspace(tmp_path)
    plan, prepared = _prepared(workspace)
    (workspace / "tasks/s1/r1" / intruder).write_text("somebody's")
    before = tree_state(workspace)
    assert not discard_scope(plan.workspace_root, prepared.identity)
    assert tree_state(workspace) == before  # the claim too


def test_d_a19_a_scope_claimed_by_another_identity_stays(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    plan, prepared = _prepared(workspace)
    other = replace(prepared.identity, run_id="another")
    before = tree_state(workspace)
    assert not discard_scope(plan.workspace_root, other)
    assert tree_state(workspace) == before


def test_d_a19_a_symlinked_scope_is_not_followed(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    plan, prepared = _prepared(workspace)
    outside = tmp_path / "outside"
    (workspace / "tasks/s1/r1").rename(outside)
    (workspace / "tasks/s1/r1").symlink_to(outside)
    assert not discard_scope(plan.workspace_root, prepared.identity)
    assert (outside / ".xworkmate/owner.json").is_file()
