"""collect-and-snapshot (§13.4, §18 F-109…112, D-A2, D-A12)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from artifacts.engine import collect_and_snapshot
from tests.artifacts.engine_support import ids, make_workspace, settings_for, tree_state, write
from xworkmate.lib.errors import InputError

NO_SOURCES = "no task-referenced source files supplied; shared media roots were not scanned"


@pytest.fixture
def staged(tmp_path: Path) -> tuple[Path, Path, Path]:
    workspace = make_workspace(tmp_path)
    media = tmp_path / "media"
    staging_tmp = tmp_path / "tmp-openclaw"
    media.mkdir()
    staging_tmp.mkdir()
    return workspace, Path(os.path.realpath(media)), Path(os.path.realpath(staging_tmp))


def _config(staged: tuple[Path, Path, Path], **extra: object) -> object:
    workspace, media, staging_tmp = staged
    return settings_for(
        workspace, openclaw_media_dir=str(media), openclaw_tmp_dir=str(staging_tmp), **extra
    )


def test_case_109_no_source_files(staged: tuple[Path, Path, Path]) -> None:
    workspace, media, _ = staged
    write(media / "global.png")  # D-A2: never scanned by default
    payload = collect_and_snapshot(ids(), _config(staged))  # type: ignore[arg-type]
    scope = workspace / "tasks" / "s1" / "r1"
    assert payload["copiedFiles"] == []
    assert payload["warnings"] == [NO_SOURCES]
    assert payload["artifactDirectory"] == str(scope)
    assert payload["snapshotDirectory"] == str(scope / "artifacts")
    assert (scope / "artifacts").is_dir()
    assert list(payload) == [
        "runId",
        "sessionKey",
        "remoteWorkingDirectory",
        "remoteWorkspaceRefKind",
        "artifactScope",
        "scopeKind",
        "artifactDirectory",
        "snapshotDirectory",
        "copiedFiles",
        "warnings",
    ]


def test_case_110_d_a12_mixed_source_files(staged: tuple[Path, Path, Path]) -> None:
    """Case 110 with D-A12: the second `same.png` gets `same-1.png` instead of overwriting."""
    workspace, media, staging_tmp = staged
    first = write(media / "a" / "same.png", b"first")
    second = write(media / "b" / "same.png", b"second")
    video = write(staging_tmp / "v.mp4", b"video")
    outside = write(workspace / "outside.png")
    sources = [
        "rel.png",
        5,
        str(first),
        str(second),
        str(first),
        str(video),
        str(outside),
        str(media / "missing.png"),
        str(media),
    ]
    payload = collect_and_snapshot(ids(sourceFiles=sources), _config(staged))  # type: ignore[arg-type]
    assert payload["copiedFiles"] == [
        "artifacts/generated-media/same.png",
        "artifacts/generated-media/same-1.png",
        "artifacts/generated-tmp/v.mp4",
    ]
    assert payload["warnings"] == [
        "skipped non-absolute snapshot source file",
        "skipped non-absolute snapshot source file",
        "skipped referenced source file outside managed staging roots: outside.png",
        "cannot read referenced source file missing.png: Error: ENOENT: no such file or "
        f"directory, realpath '{media / 'missing.png'}'",
        f"skipped referenced source that is not a file: {media.name}",
        "snapshot name clash for artifacts/generated-media/same.png; "
        "saved as artifacts/generated-media/same-1.png",
    ]
    snapshot = workspace / "tasks" / "s1" / "r1" / "artifacts"
    assert (snapshot / "generated-media" / "same.png").read_bytes() == b"first"
    assert (snapshot / "generated-media" / "same-1.png").read_bytes() == b"second"
    assert (snapshot / "generated-tmp" / "v.mp4").read_bytes() == b"video"
    assert not any(
        name.startswith(".snapshot-") for name in os.listdir(snapshot / "generated-media")
    )


def test_d_a12_retry_reuses_identical_copies(staged: tuple[Path, Path, Path]) -> None:
    _, media, _ = staged
    chart = write(media / "chart.png", b"chart")
    config = _config(staged)
    first = collect_and_snapshot(ids(sourceFiles=[str(chart)]), config)  # type: ignore[arg-type]
    again = collect_and_snapshot(ids(sourceFiles=[str(chart)]), config)  # type: ignore[arg-type]
    assert first["copiedFiles"] == again["copiedFiles"] == ["artifacts/generated-media/chart.png"]
    assert again["warnings"] == []
    chart.write_bytes(b"chart v2")
    third = collect_and_snapshot(ids(sourceFiles=[str(chart)]), config)  # type: ignore[arg-type]
    assert third["copiedFiles"] == ["artifacts/generated-media/chart-1.png"]


def test_case_112_scope_mismatch(staged: tuple[Path, Path, Path]) -> None:
    workspace, _, _ = staged
    before = tree_state(workspace)
    with pytest.raises(InputError, match=r"^artifactScope does not match sessionKey/runId$"):
        collect_and_snapshot(ids("s", "r", artifactScope="tasks/s/x"), _config(staged))  # type: ignore[arg-type]
    assert tree_state(workspace) == before


def test_snapshot_limit(staged: tuple[Path, Path, Path]) -> None:
    _, media, _ = staged
    files = [str(write(media / f"{name}.png", name)) for name in "abc"]
    payload = collect_and_snapshot(ids(sourceFiles=files, maxFiles=2), _config(staged))  # type: ignore[arg-type]
    assert len(payload["copiedFiles"]) == 2  # type: ignore[arg-type]
    assert payload["warnings"] == ["snapshot file limit reached; skipped remaining files after 2"]


def test_it_copies_at_most_the_documented_maximum_whatever_max_files_says(
    staged: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """D-K13, with the maximum lowered to 2 so that three files are enough to pass it."""
    monkeypatch.setattr("artifacts.engine.coerce.MAX_LISTED_FILES", 2)
    _, media, _ = staged
    files = [str(write(media / f"{name}.png", name)) for name in "abc"]
    payload = collect_and_snapshot(ids(sourceFiles=files, maxFiles=10**6), _config(staged))  # type: ignore[arg-type]
    assert len(payload["copiedFiles"]) == 2  # type: ignore[arg-type]
    assert payload["warnings"] == ["snapshot file limit reached; skipped remaining files after 2"]


def test_snapshot_symlink_source_pointing_outside_roots(
    staged: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    _, media, _ = staged
    secret = write(tmp_path / "secret.txt", "s")
    (media / "innocent.png").symlink_to(secret)
    payload = collect_and_snapshot(
        ids(sourceFiles=[str(media / "innocent.png")]),
        _config(staged),  # type: ignore[arg-type]
    )
    assert payload["copiedFiles"] == []
    assert payload["warnings"] == [
        "skipped referenced source file outside managed staging roots: secret.txt",
        NO_SOURCES,
    ]


def test_snapshot_refuses_a_symlinked_scope(
    staged: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    workspace, media, _ = staged
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (workspace / "tasks" / "s1").mkdir(parents=True)
    (workspace / "tasks" / "s1" / "r1").symlink_to(outside)
    source = write(media / "a.png")
    with pytest.raises(InputError, match=r"^artifactScope must stay inside the workspace$"):
        collect_and_snapshot(ids(sourceFiles=[str(source)]), _config(staged))  # type: ignore[arg-type]
    assert list(outside.iterdir()) == []


def test_d_a2_whole_root_scan_only_when_configured(staged: tuple[Path, Path, Path]) -> None:
    _, media, staging_tmp = staged
    write(media / "browser" / "current.png", b"png")
    write(staging_tmp / "renders" / "final.mp4", b"mp4")
    payload = collect_and_snapshot(ids(), _config(staged, scan_shared_media_roots=True))  # type: ignore[arg-type]
    assert payload["copiedFiles"] == [
        "artifacts/media/browser/current.png",
        "artifacts/tmp-openclaw/renders/final.mp4",
    ]
    assert payload["warnings"] == []


def test_d_a8_snapshot_numeric_options(staged: tuple[Path, Path, Path]) -> None:
    with pytest.raises(InputError, match=r"^maxFiles must be a number$"):
        collect_and_snapshot(ids(maxFiles=[1]), _config(staged))  # type: ignore[arg-type]
