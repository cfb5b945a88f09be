"""The artifact engine's calls, run on the host whose disk holds the workspace (D-K31).

Each function takes the request's params (already scoped to a bound key's run) and
answers what the engine answers; with one host (no `[workspace.hosts]`) it is the
engine's call in this process. The workspace is the params' `workspaceDir`, else
the default one; which host holds it is decided on the path's text, and the host
itself checks the path against the roots, as the engine always does.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from artifacts import engine
from artifacts.services import artifact_settings
from xworkmate.hostfiles import host_of, register_file_operation, run_on_host, this_host
from xworkmate.lib.errors import InputError

# An artifact fetched from another host travels whole in one answer; beyond this
# the download is refused (with the limit named) rather than held in memory twice.
REMOTE_DOWNLOAD_MAX = 16 * 1024 * 1024


def workspace_host(params: Mapping[str, Any]) -> str:
    workspace = params.get("workspaceDir")
    return host_of(workspace if isinstance(workspace, str) and workspace.strip() else None)


def _on_host(operation: str, params: Mapping[str, Any], **more: Any) -> Any:
    return run_on_host(workspace_host(params), operation, params=dict(params), **more)


def export(params: Mapping[str, Any]) -> dict[str, Any]:
    return dict(_on_host("artifacts.export", params))


def collect_and_snapshot(params: Mapping[str, Any]) -> dict[str, Any]:
    return dict(_on_host("artifacts.collect-and-snapshot", params))


def list_artifacts(params: Mapping[str, Any]) -> dict[str, Any]:
    return dict(_on_host("artifacts.list", params))


def read(params: Mapping[str, Any]) -> dict[str, Any]:
    return dict(_on_host("artifacts.read", params))


def prepare_scope(params: Mapping[str, Any]) -> dict[str, Any]:
    """The run's scope directory (the session_start hook's), made on the workspace's host."""
    return dict(_on_host("artifacts.prepare-scope", params))


def tool(params: Mapping[str, Any], context: engine.ToolContext) -> str:
    host = host_of(context.workspace_dir or None)
    return str(
        run_on_host(
            host,
            "artifacts.tool",
            params=dict(params),
            context={
                "session_key": context.session_key,
                "run_id": context.run_id,
                "workspace_dir": context.workspace_dir,
                "relative_task_directory": context.relative_task_directory,
            },
        )
    )


def remote_download(params: Mapping[str, Any]) -> dict[str, Any] | None:
    """The artifact behind params' ref, whole, when its workspace is another host's;
    None when it is on this host's disk (the caller streams it from the file)."""
    host = workspace_host(params)
    if not host or host == this_host():
        return None
    fetched = dict(run_on_host(host, "artifacts.download", params=dict(params)))
    fetched["content"] = base64.b64decode(fetched["content"])
    return fetched


# --- the operations, as the workspace's host runs them ----------------------------------


def _export(params: dict[str, Any]) -> Any:
    return engine.export_artifacts(params, artifact_settings())


def _collect(params: dict[str, Any]) -> Any:
    return engine.collect_and_snapshot(params, artifact_settings())


def _list(params: dict[str, Any]) -> Any:
    return engine.list_artifacts(params, artifact_settings())


def _read(params: dict[str, Any]) -> Any:
    return engine.read_artifact(params, artifact_settings())


def _prepare_scope(params: dict[str, Any]) -> Any:
    return engine.prepare_artifact_scope(params, artifact_settings())


def _tool(params: dict[str, Any], context: dict[str, str]) -> str:
    return engine.tool_execute(params, engine.ToolContext(**context), artifact_settings())


def _download(params: dict[str, Any]) -> dict[str, Any]:
    opened = engine.open_artifact_by_ref(
        str(params.get("artifactRef", "")), params, artifact_settings()
    )
    if opened.size_bytes > REMOTE_DOWNLOAD_MAX:
        opened.close()
        raise InputError(
            f"artifact is {opened.size_bytes} bytes; one from another host's workspace "
            f"is served up to {REMOTE_DOWNLOAD_MAX} bytes"
        )
    content = b"".join(opened.verified_chunks())
    return {
        "label": opened.label,
        "content_type": opened.content_type,
        "size_bytes": opened.size_bytes,
        "sha256": opened.sha256,
        "content": base64.b64encode(content).decode("ascii"),
    }


def register() -> None:
    """The artifact file operations, callable on a workspace's host (AppConfig.ready)."""
    for name, run in (
        ("artifacts.export", _export),
        ("artifacts.collect-and-snapshot", _collect),
        ("artifacts.list", _list),
        ("artifacts.read", _read),
        ("artifacts.prepare-scope", _prepare_scope),
        ("artifacts.tool", _tool),
        ("artifacts.download", _download),
    ):
        register_file_operation(name, run)
