"""schemathesis hooks for tests/integration/test_openapi_schemathesis.py: the service's state.

A schema says what a request looks like, not what exists: whether a workspace
lies inside a configured root, whether a ref is one the service signed for
that run, whether a plan awaits confirmation, whether a long task is
registered. Before each request, these hooks put real values (passed in
XWORKMATE_SCHEMA_STATE as JSON: a prepared run, its workspace, scope and ref,
each plan operation's own plan, each long-run operation's own task, a
delivery message) into the fields whose validity is such state, wherever the
generated request has a value of the documented type there. schemathesis then
judges the request as sent: a request the hook made valid counts as valid,
and one still invalid (a wrong type elsewhere, a missing field) must still be
refused. Every other field stays generated.

After each call, the operation, the method sent and the status are appended
to XWORKMATE_SCHEMA_LOG, so the test can tell which operations ever accepted
a request.
"""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import schemathesis

STATE: dict[str, Any] = json.loads(os.environ.get("XWORKMATE_SCHEMA_STATE", "{}"))
# What only the scheduler judges, by kind: an expression that parses, a zone that
# exists, a time within the next ten years.
SCHEDULE = {"cron": {"expr": "30 2 * * *", "tz": "America/New_York"}, "at": {"at": ""}}
# A method whose params may be anything: the path of any method then reaches a 200.
ANY_PARAMS_METHOD = "xworkmate.tasks.get"

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


def _path_values(case: Any) -> None:
    """A plan operation's own plan (for a UUID), the waiting message (for an id), a real method."""
    params = getattr(case, "path_parameters", None)
    if not isinstance(params, dict):
        return
    params = dict(params)
    task_id = params.get("task_id")
    if isinstance(task_id, str):
        try:
            uuid.UUID(task_id)
        except ValueError:
            return  # an invalid id stays invalid: the URL must refuse it
        action = case.operation.path.rsplit("/", 1)[-1]
        params["task_id"] = STATE["plans"].get(action, STATE["plans"]["read"])
    if isinstance(params.get("message_id"), int):
        params["message_id"] = STATE["message"]
    method = params.get("method")
    # Every other name becomes a real method, so that both the dispatch and the
    # refusal of an unknown name are tried.
    if isinstance(method, str) and len(method) % 2 == 0:
        params["method"] = ANY_PARAMS_METHOD
    case.path_parameters = params


def _long_run(values: dict[str, Any], operation: str) -> None:
    """The operation's own registered task, and a session that has one."""
    if isinstance(values.get("task"), str) and operation in STATE["tasks"]:
        values["task"] = STATE["tasks"][operation]
    if isinstance(values.get("session_key"), str):
        values["session_key"] = f"agent:main:{next(iter(STATE['tasks'].values()))}"


def _schedule(schedule: dict[str, Any], after_ms: Any) -> dict[str, Any]:
    """The generated schedule, its kind's engine-judged strings made real ones."""
    kind = schedule.get("kind")
    real = dict(SCHEDULE.get(kind.strip().lower() if isinstance(kind, str) else "", {}))
    if "at" in real:  # a day after the preview's start, or after now
        start = datetime.now(UTC)
        if isinstance(after_ms, int) and not isinstance(after_ms, bool):
            start = datetime.fromtimestamp(after_ms / 1000, UTC)
        real["at"] = (start + timedelta(days=1)).isoformat(timespec="seconds")
    return {**schedule, **{k: v for k, v in real.items() if isinstance(schedule.get(k), str)}}


def _plan_body(body: dict[str, Any], operation: str) -> None:
    if isinstance(body.get("schedule"), dict):
        body["schedule"] = _schedule(body["schedule"], body.get("afterMs"))
    if isinstance(body.get("hostTz"), str):
        body["hostTz"] = "Europe/Stockholm"  # the preview's zone for a cron without one
    if operation in ("POST /api/plans/propose", "POST /api/plans/{task_id}/revise"):
        # A message that starts with the plan's first instruction (it names the
        # plan's own ARCHIVE_ID and Task_ID): the default one.
        if isinstance(body.get("message"), str):
            body["message"] = ""
        job = body.get("job")
        payload = job.get("payload") if isinstance(job, dict) else None
        if isinstance(payload, dict) and isinstance(payload.get("message"), str):
            payload["message"] = ""
    if operation.endswith(("/confirm", "/request-changes")):
        # The user answers the revision awaiting confirmation; a confirmation says so.
        if isinstance(body.get("revision"), int):
            body["revision"] = STATE["revision"]
        if operation.endswith("/confirm") and isinstance(body.get("message"), str):
            body["message"] = "确认"


def _without_nul_in_names(value: Any) -> Any:
    """The value, no member name holding a NUL.

    The service refuses a NUL in any string, the names of members included, and the
    schema says so of every string it describes. OpenAPI 3.0 has no rule for member
    names (JSON Schema's `propertyNames` is not part of it), so schemathesis invents
    names with NUL in them where an object takes members it does not describe.
    """
    if isinstance(value, dict):
        return {k.replace("\x00", ""): _without_nul_in_names(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_nul_in_names(item) for item in value]
    return value


def _query(case: Any, operation: str) -> None:
    if not isinstance(case.query, dict):
        return
    query = dict(case.query)
    if operation == "GET /api/artifacts/download":
        _place(query, the_run=True)
    elif operation.startswith("GET /api/longrun/"):
        _long_run(query, operation)
    elif operation == "GET /api/delivery/pending" and isinstance(query.get("sessionKey"), str):
        query["sessionKey"] = STATE["messageSession"]
    case.query = query


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    operation = f"{case.operation.method.upper()} {case.operation.path}"
    _path_values(case)
    _query(case, operation)
    if not isinstance(case.body, dict):
        return
    # A copy: schemathesis compares it with the original.
    body = _without_nul_in_names(json.loads(json.dumps(case.body)))
    if operation.startswith("POST /api/plans/"):
        _plan_body(body, operation)
    elif operation.startswith("POST /api/longrun/"):
        _long_run(body, operation)
    elif operation == "POST /gateway":
        if isinstance(body.get("params"), dict):
            method = f"POST /gateway/{body.get('method')}"
            _place(body["params"], the_run=method in _THE_RUN)
    elif operation.startswith("POST /gateway/xworkmate.") or operation in _THE_RUN:
        _place(body, the_run=operation in _THE_RUN)
    if body != case.body:
        case.body = body


@schemathesis.hook
def after_call(context: Any, case: Any, response: Any) -> None:
    log = os.environ.get("XWORKMATE_SCHEMA_LOG")
    if not log:
        return
    answer = {
        "operation": f"{case.operation.method.upper()} {case.operation.path}",
        "sent": str(response.request.method).upper(),
        "status": response.status_code,
    }
    with open(log, "a", encoding="utf-8") as out:
        out.write(json.dumps(answer) + "\n")
