"""schemathesis hooks for tests/integration/test_openapi_schemathesis.py: the service's state.

A schema says what a request looks like, not what exists: whether a workspace
lies inside a configured root, whether a ref is one the service signed for
that run, whether a cron expression parses. Before each request, these hooks
put real values (a prepared run, its workspace, its scope and a ref, passed
in XWORKMATE_SCHEMA_STATE as JSON) into the fields whose validity is such
state, wherever the generated request has a value of the documented type
there (and the id of a proposed plan into plan paths). schemathesis then judges the request as sent: a request the hook made
valid counts as valid, and one still invalid (a wrong type elsewhere, a
missing field) must still be refused. Every other field stays generated.
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

import schemathesis

STATE: dict[str, Any] = json.loads(os.environ.get("XWORKMATE_SCHEMA_STATE", "{}"))
SCHEDULE = {"kind": "cron", "expr": "30 2 * * *", "tz": "America/New_York"}

# The operations whose session and run must name the prepared run (a ref is bound to it).
_THE_RUN = {
    "POST /gateway/xworkmate.artifacts.read",
    "POST /api/artifacts/tool",
    "GET /api/artifacts/download",
    "POST /api/artifacts/download",
}


def _place(params: dict[str, Any], *, the_run: bool) -> None:
    """Real values for the state-bound fields of one params object."""
    if isinstance(params.get("workspaceDir"), str):
        params["workspaceDir"] = STATE["workspace"]
    if isinstance(params.get("expectedArtifactDirs"), list):
        params["expectedArtifactDirs"] = [STATE["fallbackDir"]]
    if isinstance(params.get("artifactScope"), str):
        params["artifactScope"] = STATE["scope"] if the_run else ""
    if the_run:
        for name, value in (
            ("openclawSessionKey", STATE["session"]),
            ("runId", STATE["run"]),
            ("artifactRef", STATE["ref"]),
            ("relativePath", STATE["file"]),
        ):
            if isinstance(params.get(name), str):
                params[name] = value
    for envelope in ("xworkmate", "xworkmateMetadata"):  # session.prepare's mapping fields
        if isinstance(params.get(envelope), dict):
            _place(params[envelope], the_run=False)


def _a_plan(case: Any) -> None:
    """Point a plan operation at the plan the run proposed, when the id is a UUID at all."""
    params = getattr(case, "path_parameters", None)
    if not isinstance(params, dict) or not isinstance(params.get("task_id"), str):
        return
    try:
        uuid.UUID(params["task_id"])
    except ValueError:
        return  # an invalid id stays invalid: the URL must refuse it
    case.path_parameters = {**params, "task_id": STATE["taskId"]}


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    operation = f"{case.operation.method.upper()} {case.operation.path}"
    if "{task_id}" in case.operation.path:
        _a_plan(case)
    if operation == "GET /api/artifacts/download" and isinstance(case.query, dict):
        query = dict(case.query)
        _place(query, the_run=True)
        case.query = query
        return
    if not isinstance(case.body, dict):
        return
    body = json.loads(json.dumps(case.body))  # a copy: schemathesis compares it with the original
    if operation == "POST /api/plans/schedule-preview":
        if isinstance(body.get("schedule"), dict):
            body["schedule"] = dict(SCHEDULE)
    elif operation in ("POST /api/plans/propose", "POST /api/plans/{task_id}/revise"):
        # A schedule the scheduler takes, and a message that starts with the plan's
        # first instruction (it names the plan's own ARCHIVE_ID and Task_ID).
        if isinstance(body.get("schedule"), dict):
            body["schedule"] = dict(SCHEDULE)
        if isinstance(body.get("message"), str):
            body["message"] = ""
        job = body.get("job")
        payload = job.get("payload") if isinstance(job, dict) else None
        if isinstance(payload, dict) and isinstance(payload.get("message"), str):
            payload["message"] = ""
    elif operation == "POST /gateway":
        if isinstance(body.get("params"), dict):
            method = f"POST /gateway/{body.get('method')}"
            _place(body["params"], the_run=method in _THE_RUN)
    elif operation.startswith("POST /gateway/xworkmate.") or operation in _THE_RUN:
        _place(body, the_run=operation in _THE_RUN)
    else:
        return
    case.body = body
