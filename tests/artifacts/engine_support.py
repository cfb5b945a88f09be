"""Shared fixtures for the engine tests (plain helpers, so no conftest is needed)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from artifacts.engine import ArtifactSettings, prepare_artifact_scope

SECRET = "test-secret"


def make_workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return Path(os.path.realpath(workspace))


def settings_for(workspace: Path, **overrides: object) -> ArtifactSettings:
    values: dict[str, object] = {"signing_secret": SECRET, "workspace_roots": (str(workspace),)}
    values.update(overrides)
    return ArtifactSettings(**values)  # type: ignore[arg-type]


def ids(session: str = "s1", run: str = "r1", **extra: object) -> dict[str, object]:
    return {"openclawSessionKey": session, "runId": run, **extra}


def prepare(settings: ArtifactSettings, session: str = "s1", run: str = "r1") -> Path:
    payload = prepare_artifact_scope(ids(session, run), settings)
    return Path(str(payload["artifactDirectory"]))


def write(path: Path, content: str | bytes = "x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    return path


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def tree_state(root: Path) -> dict[str, tuple[object, ...]]:
    """Everything observable about a tree, to prove a refused call wrote nothing."""
    state: dict[str, tuple[object, ...]] = {}
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        for name in [*dirnames, *filenames]:
            path = os.path.join(directory, name)
            info = os.lstat(path)
            key = os.path.relpath(path, root)
            if os.path.islink(path):
                state[key] = ("link", os.readlink(path))
            elif os.path.isdir(path):
                state[key] = ("dir", info.st_mtime_ns)
            else:
                state[key] = ("file", info.st_size, info.st_mtime_ns, Path(path).read_bytes())
    return state


def relative_paths(payload: dict[str, object]) -> list[str]:
    artifacts = payload["artifacts"]
    assert isinstance(artifacts, list)
    return [artifact["relativePath"] for artifact in artifacts]
