"""Read and the by-ref opener (§13.6, §18 A-5, E-86…107, D-A3, D-A11)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from artifacts.engine import (
    ArtifactMissingError,
    export_artifacts,
    open_artifact_by_ref,
    read_artifact,
    sign_artifact_ref,
)
from tests.artifacts.engine_support import (
    SECRET,
    ids,
    make_workspace,
    prepare,
    settings_for,
    sha,
    tree_state,
    write,
)
from xworkmate.lib.errors import InputError


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_workspace(tmp_path)


def _exported_ref(payload: dict[str, object], index: int = 0) -> str:
    artifacts = payload["artifacts"]
    assert isinstance(artifacts, list)
    return str(artifacts[index]["artifactRef"])


def _forged(workspace: Path, secret: str = SECRET, **overrides: object) -> str:
    values: dict[str, object] = {
        "secret": secret,
        "workspace_root": str(workspace),
        "session_scope": "tasks/s1",
        "run_scope": "tasks/s1/r1",
        "artifact_scope": "tasks/s1/r1",
        "relative_path": "keep.md",
        "size_bytes": 4,
        "sha256": sha(b"keep"),
    }
    values.update(overrides)
    return sign_artifact_ref(**values)  # type: ignore[arg-type]


def test_case_5_colliding_session_keys_no_longer_share_refs(workspace: Path) -> None:
    """Q11 fixed by D-A16/D-A17: `agent:main` and `agent_main` sanitise to one name,
    but a ref is bound to the raw identity it was exported for."""
    config = settings_for(workspace)
    write(prepare(config, "agent:main", "r") / "a.txt", "abc")
    ref = _exported_ref(export_artifacts(ids("agent:main", "r"), config))
    with pytest.raises(InputError, match=r"^artifactRef does not match sessionKey/runId$"):
        read_artifact(ids("agent_main", "r", artifactRef=ref), config)
    payload = read_artifact(ids("agent:main", "r", artifactRef=ref), config)
    assert payload["sessionKey"] == "agent:main"
    assert payload["artifacts"][0]["content"] == "YWJj"  # type: ignore[index]


def test_case_86_rejects_unscoped_reads_by_relative_path(workspace: Path) -> None:
    with pytest.raises(InputError, match=r"^artifactScope or artifactRef required$"):
        read_artifact(ids(relativePath="reports/final.txt"), settings_for(workspace))


def test_case_88_rejects_reads_from_another_run_scope(workspace: Path) -> None:
    config = settings_for(workspace)
    write(prepare(config, "thread-main", "turn-1") / "a.txt")
    with pytest.raises(InputError, match=r"^artifactScope does not match sessionKey/runId$"):
        read_artifact(
            ids(
                "thread-main",
                "turn-2",
                artifactScope="tasks/thread-main/turn-1",
                relativePath="a.txt",
            ),
            config,
        )


def test_case_89_rejects_refs_from_another_session(workspace: Path) -> None:
    config = settings_for(workspace)
    write(prepare(config, "thread-main", "turn-1") / "a.txt")
    ref = _exported_ref(export_artifacts(ids("thread-main", "turn-1"), config))
    with pytest.raises(InputError, match=r"^artifactRef does not match sessionKey/runId$"):
        read_artifact(ids("thread-other", "turn-1", artifactRef=ref), config)
    with pytest.raises(InputError, match=r"^artifactRef does not match sessionKey/runId$"):
        read_artifact(ids("thread-main", "turn-2", artifactRef=ref), config)


def test_case_91_rejects_tampered_refs(workspace: Path) -> None:
    config = settings_for(workspace)
    write(prepare(config) / "a.txt")
    ref = _exported_ref(export_artifacts(ids(), config))
    with pytest.raises(InputError, match=r"^invalid artifactRef$"):
        read_artifact(ids(artifactRef=ref + "x"), config)


def test_case_94_rejects_relative_path_traversal(workspace: Path) -> None:
    config = settings_for(workspace)
    prepare(config)
    with pytest.raises(InputError, match=r"^relativePath must stay inside the workspace$"):
        read_artifact(ids(artifactScope="tasks/s1/r1", relativePath="../outside.txt"), config)


def test_case_95_rejects_artifact_scope_traversal(workspace: Path) -> None:
    with pytest.raises(InputError, match=r"^artifactScope must stay inside the workspace$"):
        read_artifact(ids(artifactScope="../outside", relativePath="a"), settings_for(workspace))


def test_case_97_read_by_valid_ref_only(workspace: Path) -> None:
    config = settings_for(workspace)
    write(prepare(config) / "keep.md", "keep")
    ref = _exported_ref(export_artifacts(ids(), config))
    payload = read_artifact(ids(artifactRef=ref), config)
    artifact = payload["artifacts"][0]  # type: ignore[index]
    assert artifact["artifactRef"] == ref
    assert list(artifact) == [
        "relativePath",
        "label",
        "contentType",
        "sizeBytes",
        "sha256",
        "artifactRef",
        "scopeKind",
        "artifactScope",
        "encoding",
        "content",
    ]
    assert payload["warnings"] == []
    assert payload["expectedArtifactDirs"] == []
    assert payload["expectedArtifactDirStatus"] == []
    assert payload["constraintSatisfied"] is True
    assert payload["missingRequiredExtensions"] == []
    assert payload["missingRequiredFileCounts"] == {}


def test_case_98_ref_related_parameter_errors(workspace: Path) -> None:
    config = settings_for(workspace)
    write(prepare(config) / "keep.md", "keep")
    ref = _exported_ref(export_artifacts(ids(), config))
    with pytest.raises(InputError, match=r"^artifactRef does not match relativePath$"):
        read_artifact(ids(artifactRef=ref, relativePath="notes"), config)
    with pytest.raises(InputError, match=r"^artifactRef does not match artifactScope$"):
        read_artifact(ids(artifactRef=ref, artifactScope="tasks/s1/r2"), config)
    with pytest.raises(InputError, match=r"^artifactScope must be a task artifact scope$"):
        read_artifact(ids(artifactRef=ref, artifactScope="tasks/x"), config)
    assert read_artifact(ids(artifactRef=ref, relativePath="keep.md"), config)["artifacts"]


def test_case_100_in_scope_symlink_is_followed(workspace: Path) -> None:
    config = settings_for(workspace)
    scope = prepare(config)
    write(scope / "sub" / "real.txt", "real")
    (scope / "sub" / "link.md").symlink_to(scope / "sub" / "real.txt")
    payload = read_artifact(ids(artifactScope="tasks/s1/r1", relativePath="sub/link.md"), config)
    artifact = payload["artifacts"][0]  # type: ignore[index]
    assert artifact["relativePath"] == "sub/real.txt"
    assert artifact["label"] == "link.md"
    assert artifact["contentType"] == "text/markdown"


def test_case_101_forged_refs_signed_with_the_configured_secret(workspace: Path) -> None:
    config = settings_for(workspace, signing_secret="s3cret")
    write(prepare(config) / "keep.md", "keep")

    def read(**overrides: object) -> dict[str, object]:
        return read_artifact(ids(artifactRef=_forged(workspace, "s3cret", **overrides)), config)

    with pytest.raises(InputError, match=r"^artifactScope does not match sessionKey/runId$"):
        read(artifact_scope="tasks/s1/r2")
    with pytest.raises(InputError, match=r"^invalid artifactRef$"):
        read(artifact_scope="")
    with pytest.raises(InputError, match=r"^invalid artifactRef$"):
        read(session_scope="tasks/s2")
    with pytest.raises(InputError, match=r"^invalid artifactRef$"):
        read(sha256="abc")
    with pytest.raises(
        InputError, match=r"^artifactRef relativePath must stay inside the workspace$"
    ):
        read(relative_path="../x")
    assert read(sha256=sha(b"keep").upper())["artifacts"]


def test_case_104_d_a3_fallback_files_are_readable_by_ref(workspace: Path) -> None:
    """Q1 fixed by D-A3: a fallback artifact reads back through its ref (not by path)."""
    config = settings_for(workspace)
    prepare(config)
    write(workspace / "reports" / "final.md", "# Done\n")
    exported = export_artifacts(ids(expectedArtifactDirs=["reports"]), config)
    artifact = exported["artifacts"][0]  # type: ignore[index]
    assert (artifact["relativePath"], artifact["artifactScope"]) == (
        "reports/final.md",
        "tasks/s1/r1",
    )
    payload = read_artifact(ids(artifactRef=artifact["artifactRef"]), config)
    read_back = payload["artifacts"][0]  # type: ignore[index]
    assert read_back["relativePath"] == "reports/final.md"
    assert read_back["content"] == "IyBEb25lCg=="
    assert read_back["artifactScope"] == "tasks/s1/r1"
    with pytest.raises(ArtifactMissingError) as caught:
        read_artifact(ids(artifactScope="tasks/s1/r1", relativePath="reports/final.md"), config)
    missing = workspace / "tasks" / "s1" / "r1" / "reports" / "final.md"
    assert caught.value.message == f"ENOENT: no such file or directory, realpath '{missing}'"


def test_d_a3_fallback_ref_is_bound_to_its_run(workspace: Path) -> None:
    config = settings_for(workspace)
    prepare(config)
    write(workspace / "reports" / "final.md", "# Done\n")
    ref = _exported_ref(export_artifacts(ids(expectedArtifactDirs=["reports"]), config))
    with pytest.raises(InputError, match=r"^artifactRef does not match sessionKey/runId$"):
        read_artifact(ids("s1", "r2", artifactRef=ref), config)


def test_d_a3_workspace_ref_into_tasks_is_invalid(workspace: Path) -> None:
    config = settings_for(workspace)
    write(prepare(config) / "keep.md", "keep")
    forged = _forged(workspace, relative_path="tasks/s1/r1/keep.md", base="workspace")
    with pytest.raises(InputError, match=r"^invalid artifactRef$"):
        read_artifact(ids(artifactRef=forged), config)
    with pytest.raises(InputError, match=r"^invalid artifactRef$"):
        read_artifact(ids(artifactRef=_forged(workspace, base="elsewhere")), config)


@pytest.mark.parametrize(
    ("requested", "result"),
    [
        ("sub//real.txt", "sub/real.txt"),
        ("sub\\real.txt", "sub/real.txt"),
        ("  sub/real.txt  ", "sub/real.txt"),
        ("./sub/real.txt", "relativePath must stay inside the workspace"),
        ("/etc/passwd", "relativePath must stay inside the workspace"),
        ("sub/../sub/real.txt", "relativePath must stay inside the workspace"),
        ("C:\\sub\\real.txt", "relativePath must stay inside the workspace"),
        ("sub/real.txt\0", "relativePath must stay inside the workspace"),
        ("..\\..\\etc\\passwd", "relativePath must stay inside the workspace"),
        ("", "relativePath required"),
    ],
)
def test_case_106_relative_path_normalization(workspace: Path, requested: str, result: str) -> None:
    config = settings_for(workspace)
    write(prepare(config) / "sub" / "real.txt", "real")
    params = ids(artifactScope="tasks/s1/r1", relativePath=requested)
    if result.startswith("sub/"):
        assert read_artifact(params, config)["artifacts"][0]["relativePath"] == result  # type: ignore[index]
        return
    with pytest.raises(InputError, match=rf"^{result}$"):
        read_artifact(params, config)


def test_case_107_d_a11_dotdot_name_is_readable(workspace: Path) -> None:
    """Q12 fixed by D-A11: `..hidden` reads like any other file."""
    config = settings_for(workspace)
    write(prepare(config) / "..hidden", "h")
    payload = read_artifact(ids(artifactScope="tasks/s1/r1", relativePath="..hidden"), config)
    assert payload["artifacts"][0]["relativePath"] == "..hidden"  # type: ignore[index]
    write(prepare(config) / "..notes.md", "n")
    payload = read_artifact(ids(artifactScope="tasks/s1/r1", relativePath="..notes.md"), config)
    assert payload["artifacts"][0]["contentType"] == "text/markdown"  # type: ignore[index]


def test_read_without_ref_signs_the_realpath(workspace: Path) -> None:
    config = settings_for(workspace)
    scope = prepare(config)
    write(scope / "real.txt", "real")
    (scope / "link.txt").symlink_to(scope / "real.txt")
    payload = read_artifact(ids(artifactScope="tasks/s1/r1", relativePath="link.txt"), config)
    ref = payload["artifacts"][0]["artifactRef"]  # type: ignore[index]
    again = read_artifact(ids(artifactRef=ref), config)
    assert again["artifacts"][0]["relativePath"] == "real.txt"  # type: ignore[index]


def test_read_of_a_directory_is_refused(workspace: Path) -> None:
    config = settings_for(workspace)
    (prepare(config) / "sub").mkdir()
    with pytest.raises(InputError, match=r"^relativePath must point to a file$"):
        read_artifact(ids(artifactScope="tasks/s1/r1", relativePath="sub"), config)


def test_read_of_a_fifo_is_refused_without_blocking(workspace: Path) -> None:
    config = settings_for(workspace)
    os.mkfifo(prepare(config) / "pipe")
    with pytest.raises(InputError, match=r"^relativePath must point to a file$"):
        read_artifact(ids(artifactScope="tasks/s1/r1", relativePath="pipe"), config)


def test_read_symlink_out_of_the_workspace_is_refused(workspace: Path, tmp_path: Path) -> None:
    config = settings_for(workspace)
    secret = write(tmp_path / "secret.txt", "secret")
    (prepare(config) / "leak.txt").symlink_to(secret)
    with pytest.raises(InputError, match=r"^relativePath must stay inside the workspace$"):
        read_artifact(ids(artifactScope="tasks/s1/r1", relativePath="leak.txt"), config)


def test_read_symlink_into_another_scope_is_refused(workspace: Path) -> None:
    config = settings_for(workspace)
    other = write(prepare(config, "s1", "r2") / "other.txt", "other")
    (prepare(config) / "peek.txt").symlink_to(other)
    with pytest.raises(InputError, match=r"^relativePath must stay inside the workspace$"):
        read_artifact(ids(artifactScope="tasks/s1/r1", relativePath="peek.txt"), config)


def test_file_replaced_between_export_and_read_is_refused(workspace: Path) -> None:
    config = settings_for(workspace)
    path = write(prepare(config) / "keep.md", "keep")
    ref = _exported_ref(export_artifacts(ids(), config))
    path.write_text("KEEP", encoding="utf-8")  # same size, new bytes
    with pytest.raises(InputError, match=r"^artifactRef does not match file content$"):
        read_artifact(ids(artifactRef=ref), config)
    with pytest.raises(InputError, match=r"^artifactRef does not match file content$"):
        open_artifact_by_ref(ref, ids(), config)
    path.write_text("longer", encoding="utf-8")
    with pytest.raises(InputError, match=r"^artifactRef does not match file content$"):
        read_artifact(ids(artifactRef=ref), config)
    path.unlink()
    with pytest.raises(ArtifactMissingError):
        read_artifact(ids(artifactRef=ref), config)


def test_ref_from_another_workspace_is_refused(workspace: Path, tmp_path: Path) -> None:
    second = tmp_path / "second"
    second.mkdir()
    config = settings_for(workspace, workspace_roots=(str(workspace), str(second)))
    write(prepare(config) / "keep.md", "keep")
    ref = _exported_ref(export_artifacts(ids(), config))
    with pytest.raises(InputError, match=r"^artifactRef does not match workspace$"):
        read_artifact(ids(artifactRef=ref, workspaceDir=str(second)), config)


def test_oversized_read_is_metadata_only(workspace: Path) -> None:
    config = settings_for(workspace)
    write(prepare(config) / "big.bin", b"x" * 100)
    payload = read_artifact(
        ids(artifactScope="tasks/s1/r1", relativePath="big.bin", maxInlineBytes=10), config
    )
    artifact = payload["artifacts"][0]  # type: ignore[index]
    assert "content" not in artifact
    assert artifact["sha256"] == sha(b"x" * 100)
    assert payload["warnings"] == ["big.bin exceeds maxInlineBytes and was not inlined"]


def test_open_artifact_by_ref_streams_the_verified_file(workspace: Path) -> None:
    config = settings_for(workspace)
    data = os.urandom(3 * 1024 * 1024 + 5)
    write(prepare(config) / "video.mp4", data)
    ref = _exported_ref(export_artifacts(ids(maxInlineBytes=0), config))
    with open_artifact_by_ref(ref, ids(), config) as opened:
        assert opened.content_type == "video/mp4"
        assert opened.size_bytes == len(data)
        assert opened.label == "video.mp4"
        assert opened.file.read() == data
    with pytest.raises(InputError, match=r"^invalid artifactRef$"):
        open_artifact_by_ref("", ids(), config)
    with pytest.raises(InputError, match=r"^artifactRef does not match sessionKey/runId$"):
        open_artifact_by_ref(ref, ids("s1", "r2"), config)


def test_reads_write_nothing(workspace: Path) -> None:
    config = settings_for(workspace)
    write(prepare(config) / "keep.md", "keep")
    before = tree_state(workspace)
    for params in (
        ids(artifactScope="tasks/s1/r1", relativePath="missing.md"),
        ids(artifactScope="tasks/s1/r1", relativePath="keep.md"),
        ids(artifactRef="garbage"),
    ):
        # Refusals are expected here; the point is the unchanged tree.
        with contextlib.suppress(InputError):
            read_artifact(params, config)
    assert tree_state(workspace) == before


_SEGMENTS = st.sampled_from(
    ["a", "b", "..", ".", "", "..a", "a..", "link", "out", "C:", "x\\..", "~"]
)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(_SEGMENTS, min_size=1, max_size=5).map("/".join))
def test_any_read_path_stays_inside_the_scope_or_is_refused(tmp_path: Path, raw: str) -> None:
    """Hypothesis on the real file system: inside the scope, or refused — never outside."""
    workspace = tmp_path / "hyp-ws"
    if not workspace.exists():
        workspace.mkdir()
        config = settings_for(workspace)
        scope = prepare(config)
        write(scope / "a" / "b", "ab")
        write(scope / "..a", "dots")
        write(tmp_path / "outside" / "b", "secret")
        (scope / "link").symlink_to(tmp_path / "outside")
        (scope / "out").symlink_to("../../../..")
    config = settings_for(workspace)
    scope_root = os.path.realpath(workspace / "tasks" / "s1" / "r1")
    try:
        payload = read_artifact(ids(artifactScope="tasks/s1/r1", relativePath=raw), config)
    except InputError:
        return
    artifact = payload["artifacts"][0]  # type: ignore[index]
    resolved = os.path.realpath(os.path.join(scope_root, artifact["relativePath"]))
    assert resolved.startswith(scope_root + "/")
    assert artifact["content"] != "c2VjcmV0"  # base64("secret")
