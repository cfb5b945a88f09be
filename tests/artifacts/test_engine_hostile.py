"""The engine under attack: colliding identities, the fallback and task scopes, files that
are not what they seem, wrong types (D-A4, D-A16, D-A17, issue 9 §2-§5)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from artifacts.engine import (
    ArtifactChangedError,
    collect_and_snapshot,
    export_artifacts,
    list_artifacts,
    open_artifact_by_ref,
    prepare_artifact_scope,
    read_artifact,
)
from tests.artifacts.engine_support import (
    ids,
    make_workspace,
    prepare,
    relative_paths,
    settings_for,
    tree_state,
    write,
)
from xworkmate.lib.errors import InputError

SKIPPED_TASKS = "skipped task scopes inside expected artifact dirs"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_workspace(tmp_path)


def _refs(payload):
    return [str(a["artifactRef"]) for a in payload["artifacts"]]


# --- issue 9 §3: two identities never share a scope (D-A16, D-A17) --------------------------------

COLLIDING = [
    (("agent:main:线程-1", "运行 1"), ("agent:main:任务-1", "步骤 1")),
    (("agent:" + "x" * 120 + "-a", "r"), ("agent:" + "x" * 120 + "-b", "r")),
    (("probe:a.b", "r"), ("probe/a.b", "r")),
    (("probe/a.b", "r"), ("probe a.b", "r")),
    (("agent:main:thread-42", "r"), ("agent_main_thread-42", "r")),
]


@pytest.mark.parametrize(("first", "second"), COLLIDING)
def test_it_gives_a_colliding_identity_its_own_scope(workspace, first, second):
    config = settings_for(workspace)
    one = prepare_artifact_scope(ids(*first), config)
    two = prepare_artifact_scope(ids(*second), config)
    scope_one, scope_two = one["relativeArtifactDirectory"], two["relativeArtifactDirectory"]
    assert scope_one != scope_two
    # The first keeps the original's name; the second gets it plus "__" and a hash.
    assert str(scope_two).startswith(f"{scope_one}__") and "__" not in str(scope_one)
    write(Path(str(one["artifactDirectory"])) / "secret.txt", "one's")
    # Nothing of the first identity's scope is ever exported, listed or read for the second.
    for call in (export_artifacts, list_artifacts):
        payload = call(ids(*second), config)
        assert payload["artifacts"] == [] and "secret.txt" not in str(payload)
    with pytest.raises(InputError, match=r"^artifactScope does not match sessionKey/runId$"):
        read_artifact(ids(*second, artifactScope=scope_one, relativePath="secret.txt"), config)
    # ... and the same identity finds its scope again, deterministically.
    assert prepare_artifact_scope(ids(*second), config)["relativeArtifactDirectory"] == scope_two
    assert export_artifacts(ids(*first), config)["artifacts"][0]["relativePath"] == "secret.txt"


def test_a_colliding_identity_cannot_snapshot_into_the_first_ones_scope(workspace, tmp_path):
    media = tmp_path / "media"
    write(media / "pic.png", "p")
    config = settings_for(workspace, openclaw_media_dir=str(media))
    first = prepare_artifact_scope(ids("probe:a.b", "r"), config)
    payload = collect_and_snapshot(
        ids("probe a.b", "r", sourceFiles=[str(media / "pic.png")]), config
    )
    assert payload["artifactScope"] != first["relativeArtifactDirectory"]
    assert not (Path(str(first["artifactDirectory"])) / "artifacts").exists()


@pytest.mark.parametrize(("first", "second"), COLLIDING)
def test_a_ref_reads_back_only_for_the_exact_raw_identity(workspace, first, second):
    """D-A17: an alias that sanitises to the same names is refused."""
    config = settings_for(workspace)
    write(Path(str(prepare_artifact_scope(ids(*first), config)["artifactDirectory"])) / "a.txt", "abc")
    ref = _refs(export_artifacts(ids(*first), config))[0]
    assert read_artifact(ids(*first, artifactRef=ref), config)["artifacts"][0]["content"] == "YWJj"
    with pytest.raises(InputError, match=r"^artifactRef does not match sessionKey/runId$"):
        read_artifact(ids(*second, artifactRef=ref), config)


def test_an_identity_the_names_spell_keeps_the_originals_ref_bytes(workspace):
    """Refs of keys the original handled safely carry no extra field (wire-compatible)."""
    config = settings_for(workspace)
    write(prepare(config, "thread-main", "turn-1") / "a.txt")
    ref = _refs(export_artifacts(ids("thread-main", "turn-1"), config))[0]
    import base64
    import json

    body = json.loads(base64.urlsafe_b64decode(ref.split(".")[0] + "=="))
    assert "openclawSessionKey" not in body and "runId" not in body


# --- issue 9 §2: the fallback never reaches into task scopes ------------------------------------


def test_a_workspace_inside_a_task_scope_is_refused(workspace):
    config = settings_for(workspace)
    write(prepare(config, "other", "r") / "theirs.txt", "secret")
    before = tree_state(workspace)
    for deep in (workspace / "tasks" / "other", workspace / "tasks", workspace / "x" / "Tasks"):
        deep.mkdir(parents=True, exist_ok=True)
        before = tree_state(workspace)
        for call in (export_artifacts, list_artifacts, prepare_artifact_scope, collect_and_snapshot):
            with pytest.raises(InputError, match=r"^workspaceDir must stay outside task scopes$"):
                call(ids("me", "r", workspaceDir=str(deep), expectedArtifactDirs=["r"]), config)
        assert tree_state(workspace) == before


def test_a_nested_workspaces_task_scopes_stay_out_of_the_fallback(workspace):
    config = settings_for(workspace)
    write(workspace / "nested" / "tasks" / "other" / "r" / "theirs.txt", "secret")
    write(workspace / "nested" / "deeper" / "TASKS" / "x" / "y" / "theirs.md", "secret")
    write(workspace / "nested" / "mine.txt", "ok")
    payload = export_artifacts(ids("me", "r", expectedArtifactDirs=["nested"]), config)
    assert relative_paths(payload) == ["nested/mine.txt"]
    assert payload["warnings"] == [SKIPPED_TASKS]  # once, naming nothing
    assert "theirs" not in str(payload)
    with pytest.raises(InputError, match=r"^expectedArtifactDir must stay outside task scopes$"):
        export_artifacts(ids("me", "r", expectedArtifactDirs=["nested/tasks"]), config)


def test_an_ignore_file_inside_task_scopes_is_never_echoed(workspace):
    config = settings_for(workspace)
    scope = prepare(config, "other", "r")
    write(scope / "artifact-ignore.md", "/etc/their-secret-rule\n")
    (workspace / "reports").symlink_to(scope)
    payload = export_artifacts(ids("me", "r", expectedArtifactDirs=["reports"]), config)
    assert payload["warnings"][0] == SKIPPED_TASKS and "their-secret" not in str(payload)


def test_a_symlink_into_another_roots_task_scopes_leaks_nothing(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = make_workspace(tmp_path / "a")
    second = make_workspace(tmp_path / "b")
    config = settings_for(first, workspace_roots=(str(first), str(second)))
    write(second / "tasks" / "other" / "r" / "theirs.txt", "secret")
    (first / "reports").symlink_to(second / "tasks" / "other")
    payload = export_artifacts(ids("me", "r", expectedArtifactDirs=["reports"]), config)
    assert payload["artifacts"] == [] and "theirs" not in str(payload)


# --- issue 9 §4: files that are not what they seem ---------------------------------------------


def test_a_hard_link_to_an_outside_file_is_never_exported_or_read(workspace, tmp_path):
    config = settings_for(workspace)
    outside = write(tmp_path / "outside" / "shadow", "root:secret")
    scope = prepare(config)
    os.link(outside, scope / "innocent.txt")
    write(scope / "fine.txt", "ok")
    payload = export_artifacts(ids(), config)
    assert relative_paths(payload) == ["fine.txt"]
    assert payload["warnings"] == ["skipped hard-linked file innocent.txt"]
    assert "root:secret" not in str(payload) and "cm9vdDpzZWNyZXQ=" not in str(payload)
    with pytest.raises(InputError, match=r"^relativePath must not be a hard link$"):
        read_artifact(ids(artifactScope="tasks/s1/r1", relativePath="innocent.txt"), config)


def test_a_hard_linked_staging_file_is_not_snapshotted(workspace, tmp_path):
    media = tmp_path / "media"
    outside = write(tmp_path / "private" / "key.pem", "KEY")
    media.mkdir()
    os.link(outside, media / "pic.png")
    config = settings_for(workspace, openclaw_media_dir=str(media))
    payload = collect_and_snapshot(ids(sourceFiles=[str(media / "pic.png")]), config)
    assert payload["copiedFiles"] == []
    assert "skipped hard-linked source file: pic.png" in payload["warnings"]


@pytest.mark.parametrize("name", ["back\\slash.txt", " leading.txt", "trailing.txt\u3000"])
def test_every_ref_an_export_returns_reads_back(workspace, name):
    """D-A3: a file whose path would not read back as itself is skipped, with a warning."""
    config = settings_for(workspace)
    scope = prepare(config)
    write(scope / name, "odd")
    write(scope / "sub" / "plain.txt", "ok")
    payload = export_artifacts(ids(), config)
    assert relative_paths(payload) == ["sub/plain.txt"]
    assert payload["warnings"] == [f"skipped file whose name does not read back: {name}"]
    for ref in _refs(payload):
        assert read_artifact(ids(artifactRef=ref), config)["artifacts"]


def test_a_workspace_that_is_a_file_or_a_fifo_is_refused(workspace):
    config = settings_for(workspace)
    write(workspace / "plain")
    os.mkfifo(workspace / "pipe")
    for target in ("plain", "pipe"):
        for call in (export_artifacts, prepare_artifact_scope, read_artifact):
            with pytest.raises(InputError, match=r"^workspaceDir must be a directory$"):
                call(ids(workspaceDir=str(workspace / target), artifactScope="tasks/s1/r1", relativePath="x"), config)


def test_a_workspace_replaced_by_a_file_after_prepare_is_a_clean_error(tmp_path):
    root = make_workspace(tmp_path)
    ws = root / "team"
    ws.mkdir()
    config = settings_for(root)
    prepare_artifact_scope(ids(workspaceDir=str(ws)), config)
    os.rename(ws, root / "gone")
    write(ws, "not a directory any more")
    with pytest.raises(InputError, match=r"^workspaceDir must be a directory$"):
        export_artifacts(ids(workspaceDir=str(ws)), config)


def test_a_download_never_completes_with_bytes_that_changed(workspace):
    config = settings_for(workspace)
    path = write(prepare(config) / "big.bin", b"a" * 3_000_000)
    ref = _refs(export_artifacts(ids(includeContent=False), config))[0]
    opened = open_artifact_by_ref(ref, ids(), config)
    chunks = opened.verified_chunks(chunk_size=1_000_000)
    sent = [next(chunks)]
    with path.open("r+b") as handle:  # changed mid-stream, same size
        handle.seek(2_500_000)
        handle.write(b"b")
    with pytest.raises(ArtifactChangedError, match=r"^artifactRef does not match file content$"):
        sent.extend(chunks)
    # The final chunk is held back until the digest matched: the body stays short.
    assert sum(len(c) for c in sent) < 3_000_000


def test_an_unchanged_download_streams_every_byte(workspace):
    config = settings_for(workspace)
    write(prepare(config) / "big.bin", b"a" * 2_500_001)
    ref = _refs(export_artifacts(ids(includeContent=False), config))[0]
    opened = open_artifact_by_ref(ref, ids(), config)
    assert b"".join(opened.verified_chunks(chunk_size=1_000_000)) == b"a" * 2_500_001


def test_an_export_with_since_on_an_unprepared_run_writes_nothing(workspace):
    config = settings_for(workspace)
    before = tree_state(workspace)
    export_artifacts(ids(sinceUnixMs=1), config)
    list_artifacts(ids(sinceUnixMs=1), config)
    assert tree_state(workspace) == before


# --- issue 9 §5: wrong types are refused, naming the field ---------------------------------------


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"workspaceDir": 123}, "workspaceDir must be a string"),
        ({"workspaceDir": ["/x"]}, "workspaceDir must be a string"),
        ({"workspaceDir": "/tmp/a\0b"}, "workspaceDir must not contain a NUL character"),
        # The contract's own wording for the identity (cases B17, C38): refused, named.
        ({"openclawSessionKey": 5}, "openclawSessionKey required"),
        ({"runId": {"a": 1}}, "runId required"),
        ({"runId": "r\0"}, "runId must not contain a NUL character"),
        ({"expectedArtifactDirs": "x"}, "expectedArtifactDirs must be an array of strings"),
        ({"artifactRef": 5}, "artifactRef must be a string"),
    ],
)
def test_a_wrong_type_is_refused_naming_the_field(workspace, params, message):
    config = settings_for(workspace)
    before = tree_state(workspace)
    call = read_artifact if "artifactRef" in params else export_artifacts
    with pytest.raises(InputError, match=f"^{message}$"):
        call({**ids(), **params}, config)
    assert tree_state(workspace) == before


def test_source_files_must_be_an_array(workspace):
    config = settings_for(workspace)
    before = tree_state(workspace)
    with pytest.raises(InputError, match=r"^sourceFiles must be an array of strings$"):
        collect_and_snapshot(ids(sourceFiles="x"), config)
    assert tree_state(workspace) == before
