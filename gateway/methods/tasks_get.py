"""`xworkmate.tasks.get` (§13.2): the native task, else the recorded run, else artifact evidence."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import DatabaseError

from artifacts import hosted
from artifacts.engine import (
    ArtifactMissingError,
    WorkspaceUnavailableError,
    check_export_options,
)
from gateway.methods.mapping import mapping_payload
from gateway.models import NativeTask, SessionMapping, TaskRun
from gateway.policies import (
    MODE,
    app_status_from_task_status,
    lookup_session_key,
    task_string,
)
from gateway.selectors import native_task_lookup, session_state
from xworkmate.lib.errors import InputError
from xworkmate.lib.jstime import wire_time
from xworkmate.methods import GatewayCall

logger = logging.getLogger("xworkmate.gateway")


def _lookup_error(code: str, message: str) -> dict[str, Any]:
    return {"ok": False, "code": code, "message": message}


def _find_native_task(session_key: str, token: str) -> NativeTask | None:
    try:
        return native_task_lookup(session_key, token)
    except DatabaseError as exc:
        # As the original: a failing registry means "no native task", logged.
        logger.warning(
            "xworkmate native task lookup failed: sessionKey=%s error=Error: %s", session_key, exc
        )
        return None


@dataclass(frozen=True)
class _Lookup:
    params: dict[str, Any]
    mapping: SessionMapping | None
    app_thread_key: str
    session_key: str
    run_id: str
    task_id: str
    include_artifacts: bool
    # When the workspace could not be read: the error, shown as a warning beside a
    # recorded status, and raised when there is no status to show (case C38).
    unavailable: list[InputError] = field(default_factory=list)

    @property
    def notes(self) -> list[str]:
        return [f"artifacts unavailable: {exc.message}" for exc in self.unavailable]

    def common(self) -> dict[str, Any]:
        """`mode`, `mapping?`, `appThreadKey`, `openclawSessionKey`, in payload order."""
        fields: dict[str, Any] = {"mode": MODE}
        if self.mapping is not None:
            fields["mapping"] = mapping_payload(self.mapping)
        fields["appThreadKey"] = (
            self.mapping.app_thread_key if self.mapping is not None else self.app_thread_key
        )
        fields["openclawSessionKey"] = self.session_key
        return fields

    @property
    def expected_dirs(self) -> list[str]:
        return list(self.mapping.expected_artifact_dirs) if self.mapping is not None else []

    def export(self, run_id: str) -> dict[str, object] | None:
        """The run's manifest; None (with a note) when the workspace is gone or not a
        directory: the recorded status is still worth answering."""
        try:
            return self._export(run_id)
        except (ArtifactMissingError, WorkspaceUnavailableError) as exc:
            self.unavailable.append(exc)
            return None

    def _export(self, run_id: str) -> dict[str, object]:
        # The mapping's dirs win over the params' dirs, even when they are [].
        dirs: object = (
            self.mapping.expected_artifact_dirs
            if self.mapping is not None
            else self.params.get("expectedArtifactDirs")
        )
        include_content = self.params.get("includeContent")
        return hosted.export(
            {
                **self.params,
                "openclawSessionKey": self.session_key,
                "runId": run_id,
                "expectedArtifactDirs": dirs,
                "includeContent": False if include_content is None else include_content,
            },
        )


def _artifact_fields(exported: Mapping[str, object] | None, *, optional: bool) -> dict[str, Any]:
    """The export's part of a tasks.get payload, in the contract's key order.

    `optional`: the keys marked `?` in §13.2 are left out when nothing was
    exported (undefined in the original, so absent, never null).
    """
    fields: dict[str, Any] = {}
    if exported is not None or not optional:
        source = exported or {}
        for key in ("artifactScope", "remoteWorkingDirectory", "remoteWorkspaceRefKind"):
            fields[key] = source.get(key)
        fields["scopeKind"] = source.get("scopeKind")
    fields["artifacts"] = _as_list(exported.get("artifacts") if exported is not None else None)
    if exported is not None:
        fields["constraintSatisfied"] = exported["constraintSatisfied"]
        fields["missingRequiredExtensions"] = exported["missingRequiredExtensions"]
    fields["warnings"] = _as_list(exported.get("warnings") if exported is not None else None)
    return fields


def _as_list(value: object) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def tasks_get_method(call: GatewayCall) -> dict[str, Any]:
    """§13.2: native task, else the recorded run, else artifact evidence, else a lookup error."""
    params = call.params  # already scoped to a bound key's run by the dispatcher (§13.0)
    # Every option is checked, not only those of a manifest the lookup gets to build:
    # a wrong type is refused, never ignored because of what was (not) found.
    check_export_options(params)
    app_thread_key = task_string(params.get("appThreadKey"))
    explicit_key = lookup_session_key(params)
    run_id = task_string(params.get("runId"))
    if not explicit_key and not app_thread_key:
        return _lookup_error("invalid_lookup", "openclawSessionKey or appThreadKey required")
    # One query for the mapping and the visible run (the bridge polls this call).
    state = session_state(session_key=explicit_key, app_thread_key=app_thread_key, run_id=run_id)
    mapping = state.mapping
    if not explicit_key and mapping is None:
        return _lookup_error(
            "mapping_not_found", f"No OpenClaw session mapping found for {app_thread_key}"
        )
    session_key = mapping.session.session_key if mapping is not None else explicit_key
    lookup = _Lookup(
        params=params,
        mapping=mapping,
        app_thread_key=app_thread_key,
        session_key=session_key,
        run_id=run_id,
        task_id=task_string(params.get("taskId")),
        include_artifacts=params.get("includeArtifacts") is not False,
    )
    native = _find_native_task(session_key, lookup.task_id or lookup.run_id)
    if native is not None and isinstance(native.record, dict):
        return _native_payload(lookup, native.record)
    exported = lookup.export(lookup.run_id) if lookup.include_artifacts and lookup.run_id else None
    run = state.run
    if run is not None:
        return _recorded_payload(lookup, run, exported)
    if exported is not None and _as_list(exported.get("artifacts")):
        return _evidence_payload(lookup, exported)
    if lookup.unavailable:
        raise lookup.unavailable[0]
    error = _lookup_error(
        "no_native_task_record" if (lookup.run_id or lookup.task_id) else "task_not_found",
        f"No native OpenClaw task record found for {session_key}",
    )
    if mapping is not None:
        error["mapping"] = mapping_payload(mapping)
        error["expectedArtifactDirs"] = lookup.expected_dirs
    return error


def _native_payload(lookup: _Lookup, task: dict[str, Any]) -> dict[str, Any]:
    """§13.2 A. `success` is true even for a failed native task (Q7, D-A7)."""
    task_run_id = task_string(task.get("runId"))
    task_task_id = task_string(task.get("taskId"))
    exported = None
    if lookup.include_artifacts:
        export_run = lookup.run_id or task_run_id or task_task_id
        if not export_run:
            raise InputError("runId required")
        exported = lookup.export(export_run)
    task_status = task_string(task.get("status")) or "running"
    payload: dict[str, Any] = {
        "success": True,
        "status": app_status_from_task_status(task_status),
        "taskStatus": task_status,
        **lookup.common(),
        "runId": lookup.run_id or task_run_id,
        "taskId": lookup.task_id or task_task_id,
        "task": task,
        "expectedArtifactDirs": lookup.expected_dirs,
        **_artifact_fields(exported, optional=True),
    }
    payload["warnings"] = [*payload["warnings"], *lookup.notes]
    payload["artifactCount"] = len(payload["artifacts"])
    return payload


def _recorded_payload(
    lookup: _Lookup, run: TaskRun, exported: Mapping[str, object] | None
) -> dict[str, Any]:
    """§13.2 B: the run recorded by session.prepare (running) or agent_end (terminal)."""
    running = run.status == TaskRun.RUNNING
    task_id = lookup.task_id or lookup.run_id
    task: dict[str, Any] = {
        "taskId": task_id,
        "runId": run.run_id,
        "status": run.status,
        "success": run.success,
        "source": "xworkmate_run_state",
        "startedAt": wire_time(run.started_at),
        "updatedAt": wire_time(run.updated_at),
    }
    if run.completed_at is not None:
        task["completedAt"] = wire_time(run.completed_at)
    if run.error:
        task["error"] = run.error
    payload: dict[str, Any] = {
        "success": True if running else run.success,
        "status": run.status,
        "taskStatus": run.status,
        "terminal": not running,
        "terminalSource": "session_prepare" if running else "agent_end",
        **lookup.common(),
        "runId": lookup.run_id,
        "taskId": task_id,
        "task": task,
    }
    if run.output:
        payload["output"] = run.output
        payload["resultSummary"] = run.output
    if run.error:
        payload["error"] = run.error
    if run.output or run.error:
        payload["message"] = run.output or run.error
    payload["expectedArtifactDirs"] = lookup.expected_dirs
    payload.update(_artifact_fields(exported, optional=True))
    payload["warnings"] = [*payload["warnings"], *lookup.notes]
    payload["artifactCount"] = len(payload["artifacts"])
    return payload


EVIDENCE_WARNING = (
    "Native OpenClaw task record was unavailable for {key}; "
    "artifacts are present but task status is unknown."
)


def _evidence_payload(lookup: _Lookup, exported: Mapping[str, object]) -> dict[str, Any]:
    """§13.2 C: files but no task record: status unknown, the bridge adjudicates."""
    task_id = lookup.task_id or lookup.run_id
    payload: dict[str, Any] = {
        "success": False,
        "status": "unknown",
        "taskStatus": "unknown",
        "evidence": "artifacts_present",
        **lookup.common(),
        "runId": lookup.run_id,
        "taskId": task_id,
        "task": {
            "taskId": task_id,
            "runId": lookup.run_id,
            "status": "unknown",
            "source": "artifact_fallback",
        },
        "expectedArtifactDirs": lookup.expected_dirs,
        **_artifact_fields(exported, optional=False),
    }
    payload["warnings"].append(EVIDENCE_WARNING.format(key=lookup.session_key))
    payload["artifactCount"] = len(payload["artifacts"])
    return payload
