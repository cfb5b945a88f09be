"""The gateway's own methods: `xworkmate.session.prepare` and `xworkmate.tasks.get`.

Contract §13.0-§13.2. Here the params are read and checked and the payloads
built, in the contract's key order; the writes are gateway.services,
the reads gateway.selectors. `METHODS` is what the app registers in
the kernel's method table (apps.py), first in the contract's order (§1.4).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import DatabaseError
from django.utils import timezone

# normalize_expected_artifact_dirs is the one normaliser of §7 (with D-A4):
# prepare must check the dirs before the session key, as the original does,
# and validate_prepare_params checks them after it.
from artifacts.engine import (
    ArtifactMissingError,
    WorkspaceUnavailableError,
    check_export_options,
    export_artifacts,
    normalize_expected_artifact_dirs,
    validate_prepare_params,
)
from artifacts.engine.schema import (
    BOOL,
    EXPORT_OPTIONS,
    IDS,
    MANIFEST,
    PREPARED,
    STR,
    STRINGS,
    WHERE,
    anything,
    described,
    params_object,
    payload_object,
)
from artifacts.services import artifact_settings
from gateway.models import NativeTask, SessionMapping, TaskRun
from gateway.policies import (
    SESSION_KEY_NOT_A_STRING,
    app_status_from_task_status,
    lookup_session_key,
    schema_version_is_one,
    task_string,
)
from gateway.selectors import native_task_lookup, session_state
from gateway.services import MappingInput, session_prepare
from xworkmate.lib.errors import InputError
from xworkmate.lib.jstime import wire_time
from xworkmate.lib.wire import (
    KEY_MAX_LENGTH,
    NOT_BLANK_PATTERN,
    WHITESPACE_CLASS,
    check_max_length,
)
from xworkmate.methods import GatewayCall, GatewayMethod

logger = logging.getLogger("xworkmate.gateway")

MODE = "gateway-chat"
CREATED_AT_MAX_LENGTH = 64


def _metadata_envelope(params: Mapping[str, Any]) -> Mapping[str, Any]:
    """`params.xworkmate || params.xworkmateMetadata || params` (plain objects only)."""
    for key in ("xworkmate", "xworkmateMetadata"):
        value = params.get(key)
        if isinstance(value, dict):
            return value
    return params


def read_mapping_request(params: Mapping[str, Any]) -> MappingInput:
    """§13.1 steps 1-2: the mapping metadata, checked in the original's order, writing nothing."""
    env = _metadata_envelope(params)
    if not schema_version_is_one(env.get("schemaVersion")):
        raise InputError("schemaVersion must be 1")
    app_thread_key = task_string(env.get("appThreadKey"))
    if not app_thread_key:
        raise InputError("appThreadKey required")
    expected_dirs = normalize_expected_artifact_dirs(env.get("expectedArtifactDirs"))
    # JS `??`: an empty top-level string does not fall back to the envelope.
    raw_key = params.get("openclawSessionKey")
    raw_key = env.get("openclawSessionKey") if raw_key is None else raw_key
    if isinstance(raw_key, int | float):
        # The original printed a number as its text, so 7 and "7" named one session
        # and a mapping was written for either; a key is a string (issue 9, bad input).
        raise InputError(SESSION_KEY_NOT_A_STRING)
    session_key = task_string(raw_key)
    if not session_key:
        raise InputError("openclawSessionKey required")
    created_at = task_string(env.get("createdAt"))
    check_max_length("appThreadKey", app_thread_key)
    check_max_length("openclawSessionKey", session_key)
    check_max_length("createdAt", created_at, CREATED_AT_MAX_LENGTH)
    return MappingInput(
        app_thread_key=app_thread_key,
        session_key=session_key,
        expected_dirs=expected_dirs,
        created_at_text=created_at,
    )


def mapping_payload(mapping: SessionMapping) -> dict[str, Any]:
    """`XWorkmateSessionMappingV1`, in its key order."""
    return {
        "schemaVersion": 1,
        "appThreadKey": mapping.app_thread_key,
        "openclawSessionKey": mapping.session.session_key,
        "expectedArtifactDirs": list(mapping.expected_artifact_dirs),
        "createdAt": mapping.created_at_text,
        "updatedAt": wire_time(mapping.updated_at),
        "source": mapping.source,
    }


# --- xworkmate.session.prepare ----------------------------------------------------


def session_prepare_method(call: GatewayCall) -> dict[str, Any]:
    """§13.1, with D-A6: every param is checked before the first write.

    The original wrote the mapping before checking runId and the workspace
    (Q4); here a call that will fail writes nothing, and the CONFLICT comes
    only from the mapping (D-A5), never from a message that says "conflict".
    """
    params = call.params  # already scoped to a bound key's run by the dispatcher (§13.0)
    request = read_mapping_request(params)
    settings = artifact_settings()
    engine_params = {
        **params,
        "openclawSessionKey": request.session_key,
        "expectedArtifactDirs": request.expected_dirs,
    }
    plan = validate_prepare_params(engine_params, settings)
    check_max_length("runId", plan.identity.run_id)
    mapping, prepared = session_prepare(
        request=request, plan=plan, now=timezone.now(), by_agent=call.caller.is_agent
    )
    return {
        **prepared,
        "mapping": mapping_payload(mapping),
        "appThreadKey": mapping.app_thread_key,
        "openclawSessionKey": mapping.session.session_key,
    }


# --- xworkmate.tasks.get -------------------------------------------------------------


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
        return export_artifacts(
            {
                **self.params,
                "openclawSessionKey": self.session_key,
                "runId": run_id,
                "expectedArtifactDirs": dirs,
                "includeContent": False if include_content is None else include_content,
            },
            artifact_settings(),
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


# --- registration ---------------------------------------------------------------------

# What a task id, thread key or createdAt may be (taskState.ts `optionalString`):
# a string (trimmed; "<nil>" from the Go bridge means none), a number or a boolean,
# read as its text.
_SCALAR_TEXT = "a string, or a number or boolean read as its text"
_WIRE_KEY = {
    "anyOf": [
        {
            "type": "string",
            "pattern": "^(?![" + WHITESPACE_CLASS + "]*<nil>[" + WHITESPACE_CLASS + "]*$)"
            + NOT_BLANK_PATTERN[1:],
            "maxLength": KEY_MAX_LENGTH,
        },
        {"type": "number"},
        {"type": "boolean"},
    ],
}
_SCHEMA_VERSION_ONE = "^[" + WHITESPACE_CLASS + "]*\\+?0*1(?:\\.0*)?[" + WHITESPACE_CLASS + "]*$"

# The mapping's own fields: at the top level of the params, or all of them in
# an `xworkmate` (else `xworkmateMetadata`) object when one is sent (§13.1).
_MAPPING_FIELDS: dict[str, Any] = {
    "schemaVersion": {
        "description": "must be 1 (the default), as JavaScript's Number() reads it: "
        '1, "1", true and [1] are 1',
        "nullable": True,
        "anyOf": [
            {"type": "number", "enum": [1]},
            {"type": "boolean", "enum": [True]},
            {"type": "string", "pattern": _SCHEMA_VERSION_ONE},
            {
                "type": "array",
                "minItems": 1,
                "maxItems": 1,
                "items": {
                    "anyOf": [
                        {"type": "number", "enum": [1]},
                        {"type": "string", "pattern": _SCHEMA_VERSION_ONE},
                    ]
                },
            },
        ],
    },
    "appThreadKey": described(
        _WIRE_KEY, f"the app's thread, mapped to one OpenClaw session: {_SCALAR_TEXT}"
    ),
    "expectedArtifactDirs": EXPORT_OPTIONS["expectedArtifactDirs"],
    "createdAt": {
        "description": f"kept verbatim for a new mapping: {_SCALAR_TEXT}, at most "
        f"{CREATED_AT_MAX_LENGTH} characters; other values mean none",
        "anyOf": [
            {"type": "string", "maxLength": CREATED_AT_MAX_LENGTH},
            {"not": {"type": "string"}},
        ],
    },
}
_SESSION_KEY = {
    **IDS["openclawSessionKey"],
    "maxLength": KEY_MAX_LENGTH,
    "description": "OpenClaw session key, e.g. agent:main:thread-42 (a string: a number is "
    "refused); when absent or null here, the envelope's",
}
_NOT_AN_OBJECT = {"not": {"type": "object"}}


def _mapping_envelope(name: str, *other_envelopes: str) -> dict[str, Any]:
    """The params when the mapping fields come in the object `name`."""
    envelope = {
        "type": "object",
        "required": ["appThreadKey"],
        "properties": {
            **_MAPPING_FIELDS,
            "openclawSessionKey": anything("read only when the top level has none (or null)"),
        },
        "additionalProperties": True,
    }
    return {
        "description": f"the mapping fields in `{name}`",
        "required": [name],
        "properties": {name: envelope, **dict.fromkeys(other_envelopes, _NOT_AN_OBJECT)},
        # The session key: the top level's when it is there (a string), else the envelope's.
        "anyOf": [
            {"required": ["openclawSessionKey"], "properties": {"openclawSessionKey": STR}},
            {
                "properties": {
                    "openclawSessionKey": {"type": "string", "nullable": True, "enum": [None]},
                    name: {
                        "required": ["openclawSessionKey"],
                        "properties": {"openclawSessionKey": _SESSION_KEY},
                    },
                }
            },
        ],
    }


SESSION_PREPARE_PARAMS = params_object(
    {
        # Typed in the first variant only: with an envelope object they are not read.
        **{
            name: anything(f"{field['description']}; read here only without an envelope object")
            for name, field in _MAPPING_FIELDS.items()
        },
        "openclawSessionKey": {**_SESSION_KEY, "nullable": True},
        "runId": {**IDS["runId"], "maxLength": KEY_MAX_LENGTH},
        **WHERE,
        "requestId": anything("not used"),
        "externalTaskId": anything("not used"),
        "xworkmate": anything(
            "an object holding the mapping fields (schemaVersion, appThreadKey, "
            "expectedArtifactDirs, createdAt, openclawSessionKey) instead of the top level; "
            "ignored when not an object"
        ),
        "xworkmateMetadata": anything("the same, when `xworkmate` is not an object"),
    },
    "runId",
    description="The mapping fields (`schemaVersion`, `appThreadKey`, `expectedArtifactDirs`, "
    "`createdAt`) come from `xworkmate` when it is an object, else from `xworkmateMetadata` "
    "when that is one, else from the top level.",
    oneOf=[
        {
            "description": "the mapping fields at the top level",
            "required": ["appThreadKey", "openclawSessionKey", "runId"],
            "properties": {
                **_MAPPING_FIELDS,
                "openclawSessionKey": STR,
                "xworkmate": _NOT_AN_OBJECT,
                "xworkmateMetadata": _NOT_AN_OBJECT,
            },
        },
        _mapping_envelope("xworkmate"),
        _mapping_envelope("xworkmateMetadata", "xworkmate"),
    ],
)

_LOOKUP_KEY = (
    "the lookup: a string (numbers and booleans are read as their text; other values as none)"
)

TASKS_GET_PARAMS = params_object(
    {
        "appThreadKey": anything(f"{_LOOKUP_KEY}; the session is the thread's mapped one"),
        "openclawSessionKey": {
            "type": "string",
            "description": "the session to look up, wins over appThreadKey: a string (any "
            "other value, null included, is refused naming the field, D-A18)",
        },
        "runId": anything(f"{_LOOKUP_KEY}; without it there is no manifest"),
        "taskId": anything(f"{_LOOKUP_KEY}; the native task's id, default runId"),
        "includeArtifacts": anything("false skips the manifest; any other value keeps it"),
        **WHERE,
        **EXPORT_OPTIONS,
        "includeContent": anything(
            "inline base64 content: off when absent, null or false; any other value turns it on"
        ),
    },
    description="Without openclawSessionKey and appThreadKey the answer is the lookup error "
    "`invalid_lookup`. The manifest's options are checked whether or not a manifest is built; "
    "`expectedArtifactDirs` applies only when the session has no mapping (the mapping's win).",
)

_MAPPING = payload_object(
    {
        "schemaVersion": {"type": "integer", "enum": [1]},
        "appThreadKey": STR,
        "openclawSessionKey": STR,
        "expectedArtifactDirs": STRINGS,
        "createdAt": STR,
        "updatedAt": described(STR, "UTC, milliseconds, Z"),
        "source": {"type": "string", "enum": [s for s, _ in SessionMapping.SOURCES]},
    },
    "schemaVersion",
    "appThreadKey",
    "openclawSessionKey",
    "expectedArtifactDirs",
    "createdAt",
    "updatedAt",
    "source",
)

SESSION_PREPARE_PAYLOAD = {
    **PREPARED,
    "properties": {
        **PREPARED["properties"],
        "mapping": _MAPPING,
        "appThreadKey": STR,
        "openclawSessionKey": STR,
    },
    "required": [*PREPARED["required"], "mapping", "appThreadKey", "openclawSessionKey"],
}

_LOOKUP_ERROR = payload_object(
    {
        "ok": {"type": "boolean", "enum": [False]},
        "code": {
            "type": "string",
            "enum": [
                "invalid_lookup",
                "mapping_not_found",
                "task_not_found",
                "no_native_task_record",
            ],
        },
        "message": STR,
        "mapping": _MAPPING,
        "expectedArtifactDirs": STRINGS,
    },
    "ok",
    "code",
    "message",
)
_TASK_STATUS = payload_object(
    {
        "success": BOOL,
        "status": {"type": "string", "enum": ["running", "completed", "failed", "unknown"]},
        "taskStatus": described(STR, "the native record's own status, else status"),
        "terminal": BOOL,
        "terminalSource": {"type": "string", "enum": ["session_prepare", "agent_end"]},
        "evidence": {"type": "string", "enum": ["artifacts_present"]},
        "mode": {"type": "string", "enum": [MODE]},
        "mapping": _MAPPING,
        "appThreadKey": STR,
        "openclawSessionKey": STR,
        "runId": STR,
        "taskId": STR,
        "task": described({"type": "object"}, "the native record, or the recorded run"),
        "output": STR,
        "resultSummary": STR,
        "error": STR,
        "message": STR,
        "expectedArtifactDirs": STRINGS,
        # null when a status was found but no manifest built (artifact evidence aside).
        **{
            key: {"type": "string", "nullable": True}
            for key in ("artifactScope", "remoteWorkingDirectory", "remoteWorkspaceRefKind")
        },
        "scopeKind": {"type": "string", "nullable": True},
        "artifacts": MANIFEST["properties"]["artifacts"],
        "constraintSatisfied": BOOL,
        "missingRequiredExtensions": STRINGS,
        "warnings": STRINGS,
        "artifactCount": {"type": "integer", "minimum": 0},
    },
    "success",
    "status",
    "taskStatus",
    "mode",
    "openclawSessionKey",
    "runId",
    "taskId",
    "task",
    "expectedArtifactDirs",
    "artifacts",
    "warnings",
    "artifactCount",
)
TASKS_GET_PAYLOAD = {
    "description": "the run's status, or a lookup error (`ok: false`)",
    "oneOf": [_LOOKUP_ERROR, {**_TASK_STATUS, "not": {"required": ["ok"]}}],
}

# The first two methods of the contract's order (§1.4); the artifacts app adds four.
METHODS = (
    GatewayMethod(
        "xworkmate.session.prepare",
        session_prepare_method,
        "gateway:write",
        "Map an app thread to an OpenClaw session and prepare the run's artifact scope",
        description=(
            "Records the durable appThreadKey ↔ openclawSessionKey mapping, creates "
            "`tasks/<session>/<run>` and marks the run running. Everything is checked "
            "before anything is written; a thread or session already mapped elsewhere "
            "is CONFLICT."
        ),
        params_doc=SESSION_PREPARE_PARAMS,
        payload_doc=SESSION_PREPARE_PAYLOAD,
        errors=(
            (403, "an agent key cannot map an app thread the bridge has not mapped"),
            (409, "the app thread or the session is already mapped to another"),
        ),
    ),
    GatewayMethod(
        "xworkmate.tasks.get",
        tasks_get_method,
        "gateway:read",
        "Task status, output and the current artifact manifest of one run",
        description=(
            "Looks the session up by openclawSessionKey or appThreadKey; answers the "
            "native task, else the recorded run, else artifact evidence. Lookup "
            "failures are successful payloads with `ok: false` and a `code`."
        ),
        params_doc=TASKS_GET_PARAMS,
        payload_doc=TASKS_GET_PAYLOAD,
    ),
)
