"""Export and list (§8-§11, §18 B-11, C-28/29/40, D-41...85)."""

from __future__ import annotations

import base64
import json
import os
import time
from pathlib import Path
from typing import Any, cast

import pytest

from artifacts.engine import (
    export_artifacts,
    list_artifacts,
    prepare_artifact_scope,
    read_artifact,
)
from artifacts.engine.content import content_type_for_path
from artifacts.engine.export import normalize_expected_file_counts, normalize_required_extensions
from tests.artifacts.engine_support import (
    ids,
    make_workspace,
    prepare,
    relative_paths,
    settings_for,
    sha,
    tree_state,
    write,
)
from xworkmate.lib.errors import InputError

NOT_PREPARED = "artifact scope is not prepared for this task run"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_workspace(tmp_path)


def test_case_11_gateway_flow_prepare_export_list_read(workspace: Path) -> None:
    config = settings_for(workspace)
    prepared = prepare_artifact_scope(ids("thread-main", "turn-1"), config)
    scope = str(prepared["artifactScope"])
    assert scope == "tasks/thread-main/turn-1"
    empty = export_artifacts(ids("thread-main", "turn-1", artifactScope=scope), config)
    assert (empty["artifacts"], empty["warnings"]) == ([], [])
    write(workspace / scope / "reports" / "final.md", "# Done\n")
    listed = list_artifacts(ids("thread-main", "turn-1", includeContent=True), config)
    assert relative_paths(listed) == ["reports/final.md"]
    assert "content" not in listed["artifacts"][0]  # type: ignore[index]
    read = read_artifact(
        ids("thread-main", "turn-1", artifactScope=scope, relativePath="reports/final.md"), config
    )
    assert read["artifacts"][0]["encoding"] == "base64"  # type: ignore[index]
    other = export_artifacts(ids("thread-main", "turn-unprepared"), config)
    assert (other["artifacts"], other["warnings"]) == ([], [NOT_PREPARED])


def test_case_41_exports_changed_files_with_metadata_and_content(workspace: Path) -> None:
    config = settings_for(workspace)
    scope = prepare(config, "thread-main", "run-1")
    path = write(scope / "reports" / "final.md", "# Done\n")
    since = path.stat().st_mtime * 1000 - 1
    payload = export_artifacts(ids("thread-main", "run-1", sinceUnixMs=since), config)
    assert payload["remoteWorkspaceRefKind"] == "remotePath"
    assert payload["scopeKind"] == "task"
    assert payload["artifactScope"] == "tasks/thread-main/run-1"
    (artifact,) = cast("list[dict[str, Any]]", payload["artifacts"])
    ref = artifact.pop("artifactRef")
    assert "." in ref
    assert artifact == {
        "relativePath": "reports/final.md",
        "label": "final.md",
        "contentType": "text/markdown",
        "sizeBytes": 7,
        "sha256": sha(b"# Done\n"),
        "scopeKind": "task",
        "artifactScope": "tasks/thread-main/run-1",
        "encoding": "base64",
        "content": "IyBEb25lCg==",
    }
    assert list(payload) == [
        "runId",
        "sessionKey",
        "remoteWorkingDirectory",
        "remoteWorkspaceRefKind",
        "artifactScope",
        "scopeKind",
        "artifacts",
        "warnings",
        "expectedArtifactDirs",
        "expectedArtifactDirStatus",
        "constraintSatisfied",
        "missingRequiredExtensions",
        "missingRequiredFileCounts",
    ]


def test_case_43_reports_missing_required_extensions(workspace: Path) -> None:
    config = settings_for(workspace)
    write(prepare(config) / "notes.md")
    payload = export_artifacts(ids(requiredArtifactExtensions=["pdf"]), config)
    assert payload["constraintSatisfied"] is False
    assert payload["missingRequiredExtensions"] == ["pdf"]


def test_case_44_reports_missing_required_file_counts(workspace: Path) -> None:
    config = settings_for(workspace)
    write(prepare(config) / "assets" / "images" / "001.png")
    payload = export_artifacts(
        ids(requiredArtifactExtensions=["png"], expectedFileCountByExtension={"png": 7}), config
    )
    assert payload["constraintSatisfied"] is False
    assert payload["missingRequiredExtensions"] == []
    assert payload["missingRequiredFileCounts"] == {"png": {"expected": 7, "actual": 1}}


def test_case_46_keeps_required_extension_artifacts_before_truncating(workspace: Path) -> None:
    config = settings_for(workspace)
    scope = prepare(config)
    write(scope / "final.mp4", b"mp4")
    time.sleep(0.02)
    for index in range(64):
        write(scope / f"part-{index:02d}.txt")
    payload = export_artifacts(
        ids(requiredArtifactExtensions=["mp4"], maxFiles=64, maxInlineBytes=0), config
    )
    paths = relative_paths(payload)
    assert len(paths) == 64
    assert paths[0] == "final.mp4"
    assert payload["constraintSatisfied"] is True
    assert "artifact limit reached; skipped remaining files after 64" in payload["warnings"]  # type: ignore[operator]


def test_case_47_orders_by_change_time_then_path(workspace: Path) -> None:
    config = settings_for(workspace)
    scope = prepare(config)
    write(scope / "older.txt")
    time.sleep(0.03)
    write(scope / "newer-b.txt")
    write(scope / "newer-a.txt")
    payload = export_artifacts(ids(includeContent=False), config)
    assert relative_paths(payload) == ["newer-a.txt", "newer-b.txt", "older.txt"]


def test_case_47_equal_times_sort_by_icu_order(workspace: Path) -> None:
    config = settings_for(workspace)
    scope = prepare(config)
    names = ["Z.txt", "z.txt", "B.txt", "a9.txt", "a10.txt", "a.txt", "1.txt", "-y.txt", "_x.txt"]
    for name in names:
        write(scope / name)
    stamp = time.time_ns()
    for name in names:
        os.utime(scope / name, ns=(stamp, stamp))
    # ctime cannot be set, so compare only the collation part of the sort.
    from artifacts.engine.collation import collation_key

    assert sorted(names, key=collation_key) == [
        "_x.txt",
        "-y.txt",
        "1.txt",
        "a.txt",
        "a10.txt",
        "a9.txt",
        "B.txt",
        "z.txt",
        "Z.txt",
    ]


def test_case_49_skips_excluded_directories_and_symlinks(workspace: Path) -> None:
    config = settings_for(workspace)
    scope = prepare(config)
    write(scope / ".git" / "config")
    write(scope / ".xworkmate" / "artifacts" / "x.txt")
    write(scope / "node_modules" / "m.js")
    write(scope / "real.txt")
    (scope / "linked.txt").symlink_to(scope / "real.txt")
    payload = export_artifacts(ids(), config)
    assert relative_paths(payload) == ["real.txt"]
    assert any("linked.txt" in warning for warning in payload["warnings"])  # type: ignore[attr-defined]


def test_case_50_symlink_warnings_in_traversal_order(workspace: Path) -> None:
    config = settings_for(workspace)
    scope = prepare(config)
    write(scope / "sub" / "real.txt")
    (scope / "sub" / "link.txt").symlink_to(scope / "sub" / "real.txt")
    (scope / "dirlink").symlink_to(scope / "sub")
    payload = export_artifacts(ids(), config)
    assert relative_paths(payload) == ["sub/real.txt"]
    assert payload["warnings"] == ["skipped symlink dirlink", "skipped symlink sub/link.txt"]


_CASE_52_FILES = [
    "a.log",
    "sub/b.log",
    "sub/c.tmp",
    "c.tmp",
    "keep.md",
    "notes",
    "sub/artifact-ignore.md",
    "dir1/x.txt",
    "dir1x/y.txt",
    "exact/file.txt",
    "exact/other.txt",
    "star.bak",
    "Prose line here",
]


def test_case_52_unfenced_ignore_rules(workspace: Path) -> None:
    config = settings_for(workspace)
    scope = prepare(config)
    for name in _CASE_52_FILES:
        write(scope / name)
    rules = [
        "# heading",
        "Prose line here",
        "*.log",
        "**/*.tmp",
        "dir1/",
        "exact/file.txt",
        "reports/*.md",
        "*",
        "**/*",
        "d*/",
        "../up",
        "./x",
        "/abs",
        "  notes  ",
    ]
    write(scope / "artifact-ignore.md", "\n".join(rules))
    payload = export_artifacts(ids(), config)
    assert sorted(relative_paths(payload)) == [
        "dir1x/y.txt",
        "exact/other.txt",
        "keep.md",
        "star.bak",
        "sub/artifact-ignore.md",
        "sub/b.log",
    ]
    assert payload["warnings"] == [
        "ignored unsupported artifact ignore rule: reports/*.md",
        "ignored unsupported artifact ignore rule: *",
        "ignored unsupported artifact ignore rule: **/*",
        "ignored unsupported artifact ignore rule: d*/",
        "ignored unsafe artifact ignore rule: ../up",
        "ignored unsafe artifact ignore rule: ./x",
        "ignored unsafe artifact ignore rule: /abs",
    ]


def test_case_53_fenced_ignore_block(workspace: Path) -> None:
    config = settings_for(workspace)
    scope = prepare(config)
    for name in _CASE_52_FILES:
        write(scope / name)
    write(
        scope / "artifact-ignore.md",
        "Prose line here\r\n```artifact-ignore\n*.log\n```\nnotes\n",
    )
    payload = export_artifacts(ids(), config)
    expected = sorted(set(_CASE_52_FILES) - {"a.log"})
    assert sorted(relative_paths(payload)) == expected
    assert payload["warnings"] == []


def test_case_55_exports_nested_dist_and_build(workspace: Path) -> None:
    config = settings_for(workspace)
    scope = prepare(config)
    write(scope / "dist" / "final.pdf")
    write(scope / "build" / "assets" / "cover.png")
    payload = export_artifacts(ids(maxInlineBytes=0), config)
    assert sorted(relative_paths(payload)) == ["build/assets/cover.png", "dist/final.pdf"]


def test_case_56_fallback_ignore_semantics(workspace: Path, tmp_path: Path) -> None:
    config = settings_for(workspace)
    prepare(config)
    write(workspace / "reports" / "a.md")
    outside = write(tmp_path / "outside.txt")
    (workspace / "reports" / "s.txt").symlink_to(outside)
    write(workspace / "reports" / "artifact-ignore.md", "a.md\nreports/a.md\n")
    payload = export_artifacts(ids(expectedArtifactDirs=["reports"]), config)
    assert relative_paths(payload) == ["reports/artifact-ignore.md"]
    assert payload["warnings"] == ["skipped symlink reports/s.txt"]


def test_case_58_does_not_scan_the_workspace_root(workspace: Path) -> None:
    write(workspace / "article.docx")
    payload = export_artifacts(ids(), settings_for(workspace))
    assert payload["artifacts"] == []


def test_case_59_does_not_adopt_workspace_root_files_with_timestamp(workspace: Path) -> None:
    write(workspace / "article.docx")
    payload = export_artifacts(
        ids("draft-article", "openclaw-run-1", sinceUnixMs=time.time() * 1000 - 1000),
        settings_for(workspace),
    )
    scope = workspace / "tasks" / "draft-article" / "openclaw-run-1"
    assert payload["artifactScope"] == "tasks/draft-article/openclaw-run-1"
    assert payload["artifacts"] == []
    assert payload["warnings"] == [NOT_PREPARED]
    # An export is a read: unlike the original, it no longer prepares the scope.
    assert not scope.exists()


def test_case_61_scoped_artifacts_win_over_expected_dirs(workspace: Path) -> None:
    config = settings_for(workspace)
    write(prepare(config) / "reports" / "scoped.md")
    write(workspace / "reports" / "root.md")
    payload = export_artifacts(ids(expectedArtifactDirs=["reports"]), config)
    assert relative_paths(payload) == ["reports/scoped.md"]


def test_case_62_does_not_adopt_old_workspace_files(workspace: Path) -> None:
    path = write(workspace / "old.pdf")
    payload = export_artifacts(
        ids(sinceUnixMs=path.stat().st_mtime * 1000 + 10000), settings_for(workspace)
    )
    assert payload["artifacts"] == []
    assert not (workspace / "tasks").exists()  # a read writes nothing


def test_case_64_old_workspace_files_and_empty_scope(workspace: Path) -> None:
    config = settings_for(workspace)
    prepare(config)
    write(workspace / "existing.pdf")
    write(workspace / "tasks" / "other" / "r" / "x.txt")
    write(workspace / ".xworkmate" / "metadata" / "internal.json")
    payload = export_artifacts(ids(sinceUnixMs=time.time() * 1000 + 100000), config)
    assert (payload["artifacts"], payload["warnings"]) == ([], [])


def test_case_65_does_not_borrow_previous_session_files(workspace: Path) -> None:
    config = settings_for(workspace)
    write(prepare(config, "thread-main", "turn-1") / "a.txt")
    prepare(config, "thread-main", "turn-follow-up")
    payload = export_artifacts(ids("thread-main", "turn-follow-up"), config)
    assert payload["artifactScope"] == "tasks/thread-main/turn-follow-up"
    assert (payload["artifacts"], payload["warnings"]) == ([], [])


def test_case_67_concurrent_scopes_export_independently(workspace: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    config = settings_for(workspace)
    runs = [
        ("thread-a", "turn-1", "a-1.txt"),
        ("thread-b", "turn-1", "b-1.txt"),
        ("thread-a", "turn-2", "a-2.txt"),
    ]
    for session, run, name in runs:
        write(prepare(config, session, run) / name)
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(lambda r: export_artifacts(ids(r[0], r[1]), config), runs))
    assert [relative_paths(result) for result in results] == [["a-1.txt"], ["b-1.txt"], ["a-2.txt"]]
    assert [result["artifactScope"] for result in results] == [
        "tasks/thread-a/turn-1",
        "tasks/thread-b/turn-1",
        "tasks/thread-a/turn-2",
    ]


def test_case_68_oversized_artifacts_are_not_inlined(workspace: Path) -> None:
    config = settings_for(workspace)
    write(prepare(config) / "large.pdf", b"0123456789abc")
    payload = export_artifacts(ids(maxInlineBytes=2), config)
    (artifact,) = cast("list[dict[str, Any]]", payload["artifacts"])
    assert "encoding" not in artifact and "content" not in artifact
    assert artifact["sizeBytes"] == 13
    assert artifact["sha256"] == sha(b"0123456789abc")
    assert payload["warnings"] == ["large.pdf exceeds maxInlineBytes and was not inlined"]


def test_case_70_limits_exported_files(workspace: Path) -> None:
    config = settings_for(workspace)
    scope = prepare(config)
    write(scope / "a.txt")
    write(scope / "b.txt")
    payload = export_artifacts(ids(maxFiles=1), config)
    assert len(payload["artifacts"]) == 1  # type: ignore[arg-type]
    assert payload["warnings"] == ["artifact limit reached; skipped remaining files after 1"]


def test_case_71_empty_file_with_zero_inline_limit_is_inlined(workspace: Path) -> None:
    config = settings_for(workspace)
    write(prepare(config) / "empty.txt", b"")
    payload = export_artifacts(ids(maxInlineBytes=0), config)
    (artifact,) = cast("list[dict[str, Any]]", payload["artifacts"])
    assert (artifact["encoding"], artifact["content"], artifact["contentType"]) == (
        "base64",
        "",
        "text/plain",
    )
    assert payload["warnings"] == []


@pytest.mark.parametrize(
    ("max_files", "config_max", "count", "warned"),
    [("1", 64, 1, True), (0, 1, 1, True), (1.9, 64, 1, True), ("64", 64, 2, False)],
)
def test_case_73_max_files_coercion(
    workspace: Path, max_files: object, config_max: int, count: int, warned: bool
) -> None:
    config = settings_for(workspace, max_files=config_max)
    scope = prepare(config)
    write(scope / "a.txt")
    write(scope / "b.txt")
    payload = export_artifacts(ids(maxFiles=max_files, includeContent=False), config)
    assert len(payload["artifacts"]) == count  # type: ignore[arg-type]
    limit = ["artifact limit reached; skipped remaining files after 1"]
    assert payload["warnings"] == (limit if warned else [])


@pytest.mark.parametrize("asked", [1001, 1e300, "5000"])
def test_it_lists_at_most_the_documented_maximum_whatever_max_files_says(
    workspace: Path, asked: object
) -> None:
    """D-K13: maxFiles above 1000 lists 1000, with the contract's own limit warning."""
    config = settings_for(workspace)
    scope = prepare(config)
    for index in range(1001):
        (scope / f"f{index:04}.txt").write_text("x")
    payload = export_artifacts(ids(maxFiles=asked, includeContent=False), config)
    assert len(payload["artifacts"]) == 1000  # type: ignore[arg-type]
    assert payload["warnings"] == ["artifact limit reached; skipped remaining files after 1000"]


def test_case_73_single_candidate_with_limit_one_has_no_warning(workspace: Path) -> None:
    config = settings_for(workspace)
    write(prepare(config) / "a.txt")
    payload = export_artifacts(ids(maxFiles=1), config)
    assert payload["warnings"] == []


@pytest.mark.parametrize("value", [True, None])
def test_case_73_d_a8_boolean_and_null_are_refused(workspace: Path, value: object) -> None:
    """Case 73 rows `true`/`null` (Q6) are decided by D-A8: non-numbers are refused."""
    with pytest.raises(InputError, match=r"^maxFiles must be a number$"):
        export_artifacts(ids(maxFiles=value), settings_for(workspace))
    with pytest.raises(InputError, match=r"^maxInlineBytes must be a number$"):
        export_artifacts(ids(maxInlineBytes=value), settings_for(workspace))


def test_case_74_fractional_max_files_floors_to_zero(workspace: Path) -> None:
    config = settings_for(workspace)
    write(prepare(config) / "a.txt")
    payload = export_artifacts(ids(maxFiles=0.5), config)
    assert payload["artifacts"] == []
    assert payload["warnings"] == ["artifact limit reached; skipped remaining files after 0"]


def test_case_76_unprepared_run_with_future_since(workspace: Path) -> None:
    write(workspace / "reports" / "x.md")
    payload = export_artifacts(
        ids(sinceUnixMs=time.time() * 1000 + 100000, expectedArtifactDirs=["reports"]),
        settings_for(workspace),
    )
    assert payload["artifacts"] == []
    assert payload["warnings"] == [NOT_PREPARED]


def test_case_77_prepared_scope_clamps_since_to_creation(workspace: Path) -> None:
    config = settings_for(workspace)
    scope = prepare(config)
    for index in range(12):
        write(scope / f"f{index:02d}.txt")
        time.sleep(0.002)
    payload = export_artifacts(ids(sinceUnixMs=time.time() * 1000 + 100000), config)
    assert len(payload["artifacts"]) == 12  # type: ignore[arg-type]


def test_case_79_symlinked_scope_escape(workspace: Path, tmp_path: Path) -> None:
    config = settings_for(workspace)
    outside = tmp_path / "outside"
    write(outside / "secret.txt", "secret")
    (workspace / "tasks" / "s").mkdir(parents=True)
    (workspace / "tasks" / "s" / "r").symlink_to(outside)
    payload = export_artifacts(ids("s", "r"), config)
    assert payload["artifacts"] == []
    assert payload["warnings"] == ["skipped path outside workspace secret.txt"]
    with pytest.raises(InputError, match=r"^relativePath must stay inside the workspace$"):
        read_artifact(ids("s", "r", artifactScope="tasks/s/r", relativePath="secret.txt"), config)


def test_symlinked_scope_ignore_file_is_not_echoed(workspace: Path, tmp_path: Path) -> None:
    """An outside artifact-ignore.md reached through a symlinked scope is never parsed."""
    config = settings_for(workspace)
    outside = tmp_path / "outside"
    write(outside / "artifact-ignore.md", "/etc/secret-line\n*\n")
    (workspace / "tasks" / "s").mkdir(parents=True)
    (workspace / "tasks" / "s" / "r").symlink_to(outside)
    payload = export_artifacts(ids("s", "r"), config)
    # Once for the rules file, once for the walk; no line of it is ever echoed.
    assert payload["warnings"] == ["skipped path outside workspace artifact-ignore.md"] * 2


def test_case_80_symlinked_expected_dir(workspace: Path, tmp_path: Path) -> None:
    config = settings_for(workspace)
    prepare(config)
    outside = tmp_path / "outside"
    write(outside / "secret.txt")
    (workspace / "linkdir").symlink_to(outside)
    payload = export_artifacts(ids(expectedArtifactDirs=["linkdir"]), config)
    assert payload["artifacts"] == []
    assert payload["warnings"] == ["skipped path outside workspace secret.txt"]
    assert payload["expectedArtifactDirStatus"] == [{"relativePath": "linkdir/", "exists": True}]


def test_case_82_d_a4_expected_dir_tasks_is_refused(workspace: Path) -> None:
    """Q2 fixed by D-A4: `tasks` cannot be an expected dir, so other runs never leak."""
    config = settings_for(workspace)
    prepare(config, "s", "r2")
    write(prepare(config, "s", "r") / "ok.txt")
    with pytest.raises(InputError, match=r"^expectedArtifactDir must stay outside task scopes$"):
        export_artifacts(ids("s", "r2", expectedArtifactDirs=["tasks"]), config)


def test_d_a4_expected_dir_symlinked_into_tasks_leaks_nothing(workspace: Path) -> None:
    config = settings_for(workspace)
    prepare(config, "s", "r2")
    write(prepare(config, "s", "r") / "ok.txt")
    (workspace / "reports").symlink_to(workspace / "tasks")
    payload = export_artifacts(ids("s", "r2", expectedArtifactDirs=["reports"]), config)
    assert payload["artifacts"] == []
    # Said once, naming nothing of the other run (D-A4).
    assert payload["warnings"] == ["skipped task scopes inside expected artifact dirs"]


def test_case_83_d_a11_dotdot_name_is_an_ordinary_file(workspace: Path) -> None:
    """Q12 fixed by D-A11: `..hidden` is exported (the original skipped it)."""
    config = settings_for(workspace)
    scope = prepare(config)
    write(scope / "..hidden", "h")
    write(scope / "ok.txt")
    payload = export_artifacts(ids(), config)
    assert sorted(relative_paths(payload)) == ["..hidden", "ok.txt"]
    assert payload["warnings"] == []


@pytest.mark.parametrize(
    ("name", "content_type"),
    [
        ("photo.JPEG", "image/jpeg"),
        ("x.tar.gz", "application/octet-stream"),
        ("Makefile", "application/octet-stream"),
        ("notes.markdown", "text/markdown"),
        (
            "deck.pptx",
            "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        ),
        (".bashrc", "application/octet-stream"),
        ("a.", "application/octet-stream"),
        ("..md", "text/markdown"),
        ("dir.md/file", "application/octet-stream"),
    ],
)
def test_case_85_content_types(name: str, content_type: str) -> None:
    assert content_type_for_path(name) == content_type


def test_case_28_export_for_latest_native_task_scope(workspace: Path) -> None:
    """Case 28 (engine part): tasks.get exports the scope tasks/<k>/L."""
    payload = export_artifacts(ids("k", "L", includeContent=False), settings_for(workspace))
    assert payload["artifactScope"] == "tasks/k/L"
    assert payload["warnings"] == [NOT_PREPARED]


def test_case_29_artifacts_present_export(workspace: Path) -> None:
    config = settings_for(workspace)
    scope = workspace / "tasks" / "agent_main_draft_sample-task" / "turn-sample"
    write(scope / "series.config.json", "{}")
    payload = export_artifacts(
        ids("agent:main:draft:sample-task", "turn-sample", includeContent=False), config
    )
    (artifact,) = cast("list[dict[str, Any]]", payload["artifacts"])
    assert artifact["relativePath"] == "series.config.json"
    assert artifact["contentType"] == "application/json"


def test_case_40_fallback_uses_only_the_dirs_passed_in(workspace: Path) -> None:
    """Case 40 (engine part): with the mapping's dirs `exports/`, `reports/` is not read."""
    config = settings_for(workspace)
    prepare(config)
    write(workspace / "reports" / "x.md")
    payload = export_artifacts(ids(expectedArtifactDirs=["exports/"]), config)
    assert payload["artifacts"] == []


def test_required_extension_and_count_normalization() -> None:
    assert normalize_required_extensions(["..TAR.GZ", " png ", "a/b", "", 5, "pdf", "PDF"]) == [
        "tar.gz",
        "png",
        "pdf",
    ]
    counts = {".PNG": "2", "gz": 1.7, "pdf": 0, "mp4": "abc", "x/y": 3, "txt": -1, "png": 1}
    assert normalize_expected_file_counts(counts) == {"png": 1, "gz": 1}
    assert list(normalize_expected_file_counts({"b": 1, "10": 1, "2": 1})) == ["2", "10", "b"]


def test_list_never_inlines(workspace: Path) -> None:
    config = settings_for(workspace)
    write(prepare(config) / "a.txt", "abc")
    payload = list_artifacts(ids(includeContent=True, maxInlineBytes=0), config)
    assert "content" not in payload["artifacts"][0]  # type: ignore[index]
    assert payload["warnings"] == []


def test_export_payload_is_json_and_inline_content_round_trips(workspace: Path) -> None:
    config = settings_for(workspace)
    data = os.urandom(300_000)
    write(prepare(config) / "blob.bin", data)
    payload = export_artifacts(ids(), config)
    artifact = json.loads(json.dumps(payload))["artifacts"][0]
    assert base64.b64decode(artifact["content"]) == data
    assert artifact["sha256"] == sha(data)


def test_export_of_file_replaced_after_walk_aborts(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file swapped for a symlink between walk and read is never followed."""
    import artifacts.engine.export as export_module

    config = settings_for(workspace)
    scope = prepare(config)
    write(scope / "a.txt", "inside")
    secret = write(workspace.parent / "secret.txt", "secret")
    original = export_module._select

    def swap_then_select(*args: object, **kwargs: object) -> object:
        (scope / "a.txt").unlink()
        (scope / "a.txt").symlink_to(secret)
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(export_module, "_select", swap_then_select)
    with pytest.raises(InputError) as caught:
        export_artifacts(ids(), config)
    assert caught.value.message.startswith("ENOENT: no such file or directory, open ")


def test_bad_export_input_writes_nothing(workspace: Path) -> None:
    config = settings_for(workspace)
    before = tree_state(workspace)
    bad: list[dict[str, object]] = [
        ids(sinceUnixMs=5, artifactScope="tasks/s1/r2"),
        ids(sinceUnixMs=5, expectedArtifactDirs=["/abs"]),
        ids(sinceUnixMs=5, expectedArtifactDirs=["tasks"]),
        ids(sinceUnixMs=5, maxFiles="lots"),
        ids(sinceUnixMs=5, workspaceDir="/etc"),
        ids(sinceUnixMs=5, artifactScope="../x"),
    ]
    for params in bad:
        with pytest.raises(InputError):
            export_artifacts(params, config)
    assert tree_state(workspace) == before
