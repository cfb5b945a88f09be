"""REST endpoints of long-run mode: each script of the original skill, and its subcommands.

One endpoint per operation under `/api/longrun/`, named after the script
(`/api/longrun/work-cycle-tick`) or, for task_state.py, its subcommand
(`/api/longrun/task-state/set`). Fields are the scripts' flags in snake case
(`--origin-session-key` is `origin_session_key`). What an operation answers is
the original's output, unchanged (D-B21):

- an answer is 200 with the document the script printed on stdout (a JSON
  object, or a JSON string for the scripts that printed lines of text), and
  the header `X-Longrun-Exit-Code` carries the exit code it ended with (1 when
  something is due, 2 for a failed start validation);
- a refusal is the API's error shape `{"error": {"code", "message"}}` whose
  message is what the script printed on stderr (`task not found: A`, or its
  JSON document on one line), with the same header: exit 1 (task not found)
  is 404, exit 2 (an invalid value) is 400, a refusal that depends on what
  is stored (exit 3 lock held, exit 4 no session key, a task that is done) is 409.

An agent key (bound to a session) acts on its own session's tasks only: a
task bound to another session key is not found (404, nothing changes), naming
another session is 403, the reports cover its session's tasks, and the runs
that walk every session (run-keepalive-once, run-watchdog-once, cleanup-state,
clear without a task) are the bridge's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.core.validators import RegexValidator
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    extend_schema_serializer,
)
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from longrun import selectors, services
from longrun.models import LABEL_MAX_LENGTH, NAME_MAX_LENGTH, SHA256_LENGTH, TEXT_MAX_LENGTH
from longrun.policies.answers import (
    EXIT_ACTION,
    EXIT_INVALID,
    EXIT_LOCKED,
    EXIT_NO_KEY,
    Answer,
    LongrunError,
)
from longrun.policies.states import STATES
from longrun.policies.timing import MAX_THRESHOLD_MINUTES, MAX_THRESHOLD_SECONDS
from xworkmate.api_errors import error_body
from xworkmate.auth import HasScope, caller_of
from xworkmate.lib.paging import Page
from xworkmate.lib.wire import KEY_MAX_LENGTH, NOT_BLANK_PATTERN, js_trim
from xworkmate.openapi import api_error_responses
from xworkmate.paging import page_header_parameters, page_headers, page_of, page_parameters

EXIT_CODE_HEADER = "X-Longrun-Exit-Code"
READ, WRITE = "longrun:read", "longrun:write"
# The task list, the lock table and the reports that survey every task answer
# this many tasks at a time (D-K13); the headers say where the next page starts.
LIST_PAGE, MAX_LIST_PAGE = 100, 500

# A progress interval the stored seconds column holds: each unit at most four
# digits, and not zero (`0m` is no interval), as longrun.policies.timing reads it.
_UNIT = "[0-9]{1,4}"
_NONZERO = "0{0,3}[1-9][0-9]{0,3}"
PROGRESS_EVERY_PATTERN = (
    f"^(?:{_NONZERO}h(?:{_UNIT}m)?(?:{_UNIT}s)?"
    f"|(?:{_UNIT}h)?{_NONZERO}m(?:{_UNIT}s)?"
    f"|(?:{_UNIT}h)?(?:{_UNIT}m)?{_NONZERO}s)$"
)
_TRIGGER_MAX = 20_000
_DROP_MAX = 100


# --- fields: strict JSON types, limits as the services keep them ---------------------------------


class _Text(serializers.CharField):
    """A string, kept as sent (blank allowed, D-B3); a number is refused, not turned into text."""

    def __init__(self, *, max_length: int = TEXT_MAX_LENGTH, **kwargs: Any) -> None:
        kwargs.setdefault("allow_blank", True)
        super().__init__(max_length=max_length, trim_whitespace=False, **kwargs)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return str(super().to_internal_value(data))


class _Key(_Text):
    """A task name or session key: not blank once trimmed as JavaScript trims (D-K7).

    The limit holds for the value as sent, which is what the schema's maxLength says.
    """

    def __init__(self, *, max_length: int = KEY_MAX_LENGTH, **kwargs: Any) -> None:
        kwargs["allow_blank"] = False
        # Documents the rule in the schema (drf-spectacular reads the validator).
        kwargs["validators"] = [RegexValidator(NOT_BLANK_PATTERN, "must not be blank")]
        super().__init__(max_length=max_length, **kwargs)

    def to_internal_value(self, data: Any) -> str:
        text = super().to_internal_value(data)
        if not js_trim(text):
            self.fail("blank")
        return text


def _task(**kwargs: Any) -> _Key:
    return _Key(max_length=NAME_MAX_LENGTH, help_text="the task's name (--task)", **kwargs)


@extend_schema_field({"type": "string", "enum": list(STATES)})
class _State(_Text):
    """One of the six states; anything else is the original's `invalid state: <x>` (exit 2)."""


@extend_schema_field({"type": "string", "pattern": PROGRESS_EVERY_PATTERN})
class _ProgressEvery(_Text):
    def to_internal_value(self, data: Any) -> str:
        text = super().to_internal_value(data)
        if not re.fullmatch(PROGRESS_EVERY_PATTERN, text, flags=re.ASCII):
            raise ValidationError(
                "must be a duration like 90s, 3m, 2h or 1h30m (each unit at most 4 digits, "
                "not zero)"
            )
        return text


@extend_schema_field({"type": "boolean"})
class _Flag(serializers.BooleanField):
    """true or false, as JSON has them (a string or a number is refused)."""

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class _Count(serializers.IntegerField):
    """A whole number as JSON has it (`10`, or `10.0` as JSON Schema counts it); a string,
    a boolean or a fraction is refused."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, float) and data.is_integer():
            data = int(data)
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return int(super().to_internal_value(data))


class _QueryCount(serializers.IntegerField):
    """A whole number in a query: ASCII digits only (`²` and `1.0` are no numbers here)."""

    def to_internal_value(self, data: Any) -> int:
        # Digits beyond a dozen are out of every range here; int() is not asked.
        if not isinstance(data, str) or not data.isascii() or not data.isdigit() or len(data) > 12:
            self.fail("invalid")
        return int(super().to_internal_value(data))


def _minutes(help_text: str, field: type[serializers.IntegerField] = _QueryCount) -> Any:
    return field(required=False, min_value=1, max_value=MAX_THRESHOLD_MINUTES, help_text=help_text)


_STALE_HELP = "--stale-minutes; default the configured longrun.stale (10m)"
_COOLDOWN_HELP = "--unknown-cooldown-minutes; default the configured longrun.unknown_cooldown (2m)"
_IDLE_HELP = "--idle-seconds; default the configured longrun.idle (60s)"


# --- the answers ---------------------------------------------------------------------------------


def _original_text(body: object) -> str:
    """What the script printed on stderr: its line, or its JSON document on one line."""
    return body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)


def _refusal_status(exc: LongrunError) -> tuple[int, str]:
    if exc.exit_code == EXIT_ACTION:
        return 404, "NOT_FOUND"
    # The JSON refusals depend on what is stored, not on the request alone: a
    # lock another task holds (3), no session key given or kept (4), a task
    # that is done (2, the reopen guard of D-B17).
    if exc.exit_code in (EXIT_LOCKED, EXIT_NO_KEY) or not isinstance(exc.body, str):
        return 409, "CONFLICT"
    return 400, "INVALID_REQUEST"


def _answered(answer: Answer, page: Page | None = None) -> Response:
    headers = {EXIT_CODE_HEADER: str(answer.exit_code)}
    if page is not None and answer.listed is not None:
        headers |= page_headers(page, *answer.listed)
    return Response(answer.body, headers=headers)


def _page(request: Request) -> Page:
    """The page of a list or a report: the body stays the script's, the headers page it."""
    return page_of(request, default=LIST_PAGE, maximum=MAX_LIST_PAGE)


def _for_every_session(request: Request, operation: str) -> None:
    if caller_of(request).is_agent:
        raise PermissionDenied(
            f"{operation} acts on every session's tasks: a key bound to a session may not run it"
        )


def _optional(values: dict[str, Any], name: str) -> str:
    value: str = values.get(name, "")
    return value


class _LongrunView(APIView):
    """A long-run endpoint: the original's refusals keep their text and exit code."""

    permission_classes = [HasScope]
    required_scope = READ

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, LongrunError):
            status, code = _refusal_status(exc)
            return Response(
                error_body(code, _original_text(exc.body), envelope=False),
                status=status,
                headers={EXIT_CODE_HEADER: str(exc.exit_code)},
            )
        response = super().handle_exception(exc)
        # A refusal the original never had (a key, a scope, a malformed body).
        exit_code = EXIT_ACTION if response.status_code == 404 else EXIT_INVALID
        response[EXIT_CODE_HEADER] = str(exit_code)
        return response

    def _body(self, serializer: type[serializers.Serializer[Any]]) -> dict[str, Any]:
        data = serializer(data=self.request.data)
        data.is_valid(raise_exception=True)
        return dict(data.validated_data)

    def _query(self, serializer: type[serializers.Serializer[Any]]) -> dict[str, Any]:
        # A plain dict: given a QueryDict, DRF reads `?stale_minutes=` as "not given"
        # and keeps the last of repeated values. A list field takes every value; any
        # other parameter given twice is refused.
        params = self.request.query_params
        lists = {
            name for name, field in serializer().fields.items()
            if isinstance(field, serializers.ListField)
        }
        values: dict[str, Any] = {}
        for name, given in params.lists():
            if name in lists:
                values[name] = given
            elif len(given) > 1:
                raise ValidationError({name: "given more than once (it takes one value)"})
            else:
                values[name] = given[0]
        data = serializer(data=values)
        data.is_valid(raise_exception=True)
        return dict(data.validated_data)


# --- the OpenAPI description ---------------------------------------------------------------------

_EXIT_HEADER_DOC = OpenApiParameter(
    EXIT_CODE_HEADER,
    OpenApiTypes.INT,
    OpenApiParameter.HEADER,
    required=True,
    response=[200],
    description="the exit code the original script ended with (D-B18): 0 nothing to do, "
    "1 something is due or was produced, 2 a failed start validation; refusals carry it too",
)

_Errors = dict[int, str | tuple[str, tuple[str, ...]]]
_ONE_TASK: _Errors = {
    400: "a field breaks its rule (named); the script's own refusals keep their text",
    403: "the key lacks the operation's scope",
    404: "`task not found: <task>`: no such task, or (for an agent key) another session's",
}
_STATE_CONFLICT = (
    "the refusal that depends on what is stored, as the script printed it: "
    '`{"error": "session lock exists", …}` (exit 3), `{"error": "missing origin_session_key", '
    '…}` or `missing origin_session_key for task: <t>` (exit 4), `{"error": "reopen required", '
    "…}` (a done task)"
)
_WRITE: _Errors = {
    **_ONE_TASK,
    403: "the key lacks `longrun:write`, or an agent key names another session",
    409: (_STATE_CONFLICT, ("CONFLICT",)),
    411: "",
    415: "",
}
_REPORT: _Errors = {
    400: "a threshold, `limit` or `offset` out of range (named)",
    403: "the key lacks `longrun:read`",
}
_EVERY_SESSION: _Errors = {
    400: "a field breaks its rule (named)",
    403: "the key lacks `longrun:write`, or is bound to a session (this run is the bridge's)",
    411: "",
    415: "",
}

_RECORD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "the task record as task_state.py printed it (§4.3)",
    "required": ["task", "session", "state", "progress_every", "updated_at", "session_label"],
    "properties": {
        "task": {"type": "string"},
        "session": {"type": "string"},
        "origin_session_key": {"type": "string", "nullable": True},
        "state": {"type": "string", "enum": list(STATES)},
        "goal": {"type": "string"},
        "done_when": {"type": "string"},
        "blocked_when": {"type": "string"},
        "boundary": {"type": "string"},
        "next_check": {"type": "string"},
        "note": {"type": "string"},
        "progress_every": {"type": "string"},
        "last_progress_at": {"type": "string", "nullable": True},
        "last_progress_attempt_at": {"type": "string", "nullable": True},
        "last_progress_sent_at": {"type": "string", "nullable": True},
        "last_progress_unknown_at": {"type": "string", "nullable": True},
        "last_progress_delivery_status": {
            "type": "string",
            "nullable": True,
            "enum": ["sent", "unknown", "failed", None],
        },
        "last_progress_delivery_id": {"type": "string", "nullable": True},
        "last_progress_message_hash": {"type": "string", "nullable": True},
        "last_progress_send_error": {"type": "string", "nullable": True},
        "last_visible_reply_at": {"type": "string", "nullable": True},
        "last_tool_result_at": {"type": "string", "nullable": True},
        "last_resume_at": {"type": "string", "nullable": True},
        "last_resume_reason": {"type": "string", "nullable": True},
        "last_resume_count": {"type": "integer"},
        "updated_at": {"type": "string"},
        "session_label": {"type": "string"},
    },
}


_PAGED_NOTE = (
    f" One page at a time (`limit` 1-{MAX_LIST_PAGE}, default {LIST_PAGE}; D-K13): "
    "`X-Total-Count` says how many there are in all, `X-Next-Offset` the `offset` of the "
    "next page (absent on the last)."
)


def _document(description: str, required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "description": description}
    if required:
        schema["required"] = list(required)
    return schema


def _schema(
    operation: str,
    summary: str,
    answer: dict[str, Any],
    errors: _Errors,
    *,
    request: type[serializers.Serializer[Any]] | None = None,
    query: type[serializers.Serializer[Any]] | None = None,
    description: str = "",
    paged: bool = False,
) -> Callable[[Callable[..., Response]], Callable[..., Response]]:
    parameters: list[Any] = [_EXIT_HEADER_DOC]
    if query is not None:
        parameters.insert(0, query)
    if paged:
        parameters += [
            *page_parameters(default=LIST_PAGE, maximum=MAX_LIST_PAGE),
            *page_header_parameters(),
        ]
        description += _PAGED_NOTE
    return extend_schema(
        operation_id=f"longrun_{operation.replace('-', '_')}",
        summary=summary,
        description=description,
        parameters=parameters,
        request=request,
        responses={200: OpenApiResponse(answer), **api_error_responses(errors)},
        tags=["longrun"],
    )


# --- task_state.py (§7.1) ------------------------------------------------------------------------


class TaskSetApi(_LongrunView):
    """`task_state.py set`: register or update a task, and hold or release its session's lock."""

    required_scope = WRITE

    @extend_schema_serializer(component_name="LongrunSetInput")
    class InputSerializer(serializers.Serializer[Any]):
        task = _task()
        session = _Text(max_length=LABEL_MAX_LENGTH, help_text="a human-readable session name")
        state = _State(help_text="analyzing, executing, waiting, blocked, handoff or done")
        origin_session_key = _Key(
            required=False,
            help_text="the real OpenClaw session the task reports to; required (given or kept "
            "from before) for analyzing, executing and waiting. An agent key's own session, "
            "whatever it names",
        )
        goal = _Text()
        done_when = _Text()
        blocked_when = _Text()
        boundary = _Text()
        next_check = _Text(help_text="an ISO time, a duration (10m) or free text (D-B3)")
        note = _Text(help_text="the next step")
        progress_every = _ProgressEvery(required=False, help_text="default 3m (D-B2)")
        force_lock = _Flag(required=False, default=False)
        reopen = _Flag(required=False, default=False, help_text="leave done (D-B17)")

    @_schema(
        "set",
        "Register or update a long task (task_state.py set)",
        _RECORD_SCHEMA,
        _WRITE,
        request=InputSerializer,
        description="Scope: `longrun:write`. Checks in the original's order: the state "
        "(400 `invalid state: <x>`), the session key an active state needs (409, exit 4), "
        "the session's lock (409, exit 3, unless `force_lock`). Names are one namespace: an "
        "agent key's `set` of a name another session's task has is 404.",
    )
    def post(self, request: Request) -> Response:
        values = self._body(self.InputSerializer)
        caller = caller_of(request)
        key = caller.session(_optional(values, "origin_session_key"), "origin_session_key")
        return _answered(
            services.task_set(
                name=values["task"],
                session=values["session"],
                state=values["state"],
                goal=values["goal"],
                done_when=values["done_when"],
                blocked_when=values["blocked_when"],
                boundary=values["boundary"],
                next_check=values["next_check"],
                note=values["note"],
                origin_session_key=key,
                progress_every=_optional(values, "progress_every"),
                force_lock=values["force_lock"],
                reopen=values["reopen"],
                confined_to=caller.confined_to,
                by=caller.name,
                now=timezone.now(),
            )
        )


class _TaskQuery(serializers.Serializer[Any]):
    task = _task()


class TaskShowApi(_LongrunView):
    @_schema(
        "show",
        "One task's record (task_state.py show)",
        _RECORD_SCHEMA,
        _ONE_TASK,
        query=_TaskQuery,
        description="Scope: `longrun:read`.",
    )
    def get(self, request: Request) -> Response:
        values = self._query(_TaskQuery)
        return _answered(
            selectors.task_show(name=values["task"], confined_to=caller_of(request).confined_to)
        )


class TaskListApi(_LongrunView):
    @_schema(
        "list",
        "The tasks, one line each (task_state.py list)",
        {
            "type": "string",
            "description": "`no tasks`, or one line per task: "
            "`- <task> | <state> | <session> | next=<next_check> | updated=<updated_at>`",
        },
        {400: "`limit` or `offset` out of range (named)", 403: "the key lacks `longrun:read`"},
        description="Scope: `longrun:read`. An agent key sees its session's tasks. The live "
        "tasks in creation order.",
        paged=True,
    )
    def get(self, request: Request) -> Response:
        page = _page(request)
        own = caller_of(request).confined_to
        return _answered(selectors.tasks_list(confined_to=own, page=page), page)


class LocksApi(_LongrunView):
    @_schema(
        "locks",
        "The session locks: session key -> task (task_state.py locks)",
        {"type": "object", "additionalProperties": {"type": "string"}},
        {400: "`limit` or `offset` out of range (named)", 403: "the key lacks `longrun:read`"},
        description="Scope: `longrun:read`. An agent key sees its session's lock. The locks "
        "by session key.",
        paged=True,
    )
    def get(self, request: Request) -> Response:
        page = _page(request)
        own = caller_of(request).confined_to
        return _answered(selectors.locks_show(confined_to=own, page=page), page)


class _ProgressInput(serializers.Serializer[Any]):
    task = _task()
    note = _Text(required=False, help_text="kept in the task log, not as the next step (D-B8)")
    delivery_id = _Key(required=False)
    message_hash = _Key(required=False, max_length=SHA256_LENGTH)


class _ProgressErrorInput(_ProgressInput):
    error = _Text(required=False, help_text="why the send failed")


class _ProgressApi(_LongrunView):
    """touch-progress and mark-progress-<outcome>: the agent reports a delivery."""

    required_scope = WRITE
    outcome: services.ProgressOutcome
    input_serializer: type[serializers.Serializer[Any]] = _ProgressInput

    def post(self, request: Request) -> Response:
        caller = caller_of(request)
        values = self._body(self.input_serializer)
        return _answered(
            services.task_progress_record(
                name=values["task"],
                outcome=self.outcome,
                error=_optional(values, "error"),
                note=_optional(values, "note"),
                delivery_id=_optional(values, "delivery_id"),
                message_hash=_optional(values, "message_hash"),
                confined_to=caller.confined_to,
                by=caller.name,
                now=timezone.now(),
            )
        )


def _progress_view(
    name: str, outcome: services.ProgressOutcome, summary: str
) -> type[_ProgressApi]:
    serializer = (
        _ProgressErrorInput if outcome in ("attempt", "unknown", "failed") else _ProgressInput
    )

    class View(_ProgressApi):
        input_serializer = serializer

        @_schema(
            name,
            summary,
            _RECORD_SCHEMA,
            _WRITE,
            request=extend_schema_serializer(component_name=f"Longrun{outcome.title()}Input")(
                type(f"Longrun{outcome.title()}Input", (serializer,), {})
            ),
            description="Scope: `longrun:write`. Sent and touch are the agent's visible "
            "progress; an attempt, an unknown outcome or a failure moves no activity clock (D-B9).",
        )
        def post(self, request: Request) -> Response:
            return super().post(request)

    View.outcome = outcome
    View.__name__ = View.__qualname__ = f"{outcome.title()}ProgressApi"
    return View


TouchProgressApi = _progress_view(
    "touch-progress", "touch", "The progress message arrived (task_state.py touch-progress)"
)
MarkProgressAttemptApi = _progress_view(
    "mark-progress-attempt", "attempt", "A progress send was attempted (mark-progress-attempt)"
)
MarkProgressSentApi = _progress_view(
    "mark-progress-sent", "sent", "A foreground event was delivered (mark-progress-sent)"
)
MarkProgressUnknownApi = _progress_view(
    "mark-progress-unknown", "unknown", "A send timed out: outcome unknown (mark-progress-unknown)"
)
MarkProgressFailedApi = _progress_view(
    "mark-progress-failed", "failed", "A send failed (mark-progress-failed)"
)


class _NoteInput(serializers.Serializer[Any]):
    task = _task()
    note = _Text(required=False, help_text="kept in the task log")


class _ActivityApi(_LongrunView):
    required_scope = WRITE
    signal: services.ActivitySignal

    def post(self, request: Request) -> Response:
        caller = caller_of(request)
        values = self._body(_NoteInput)
        return _answered(
            services.task_activity_record(
                name=values["task"],
                signal=self.signal,
                note=_optional(values, "note"),
                confined_to=caller.confined_to,
                by=caller.name,
                now=timezone.now(),
            )
        )


class MarkVisibleReplyApi(_ActivityApi):
    signal = "visible_reply"

    @_schema(
        "mark-visible-reply",
        "The agent replied visibly (task_state.py mark-visible-reply)",
        _RECORD_SCHEMA,
        _WRITE,
        request=extend_schema_serializer(component_name="LongrunActivityInput")(_NoteInput),
        description="Scope: `longrun:write`. A keepalive activity signal.",
    )
    def post(self, request: Request) -> Response:
        return super().post(request)


class MarkToolResultApi(_ActivityApi):
    signal = "tool_result"

    @_schema(
        "mark-tool-result",
        "A tool answered (task_state.py mark-tool-result)",
        _RECORD_SCHEMA,
        _WRITE,
        request=extend_schema_serializer(component_name="LongrunActivityInput")(_NoteInput),
        description="Scope: `longrun:write`. A keepalive activity signal.",
    )
    def post(self, request: Request) -> Response:
        return super().post(request)


class MarkResumeApi(_LongrunView):
    required_scope = WRITE

    @extend_schema_serializer(component_name="LongrunResumeInput")
    class InputSerializer(_NoteInput):
        reason = _Key(required=False, max_length=64, help_text="default manual")

    @_schema(
        "mark-resume",
        "The task was resumed (task_state.py mark-resume)",
        _RECORD_SCHEMA,
        _WRITE,
        request=InputSerializer,
        description="Scope: `longrun:write`.",
    )
    def post(self, request: Request) -> Response:
        caller = caller_of(request)
        values = self._body(self.InputSerializer)
        return _answered(
            services.task_resume_record(
                name=values["task"],
                reason=_optional(values, "reason"),
                note=_optional(values, "note"),
                confined_to=caller.confined_to,
                by=caller.name,
                now=timezone.now(),
            )
        )


_SESSION_HELP = "the session key of the lock (an agent key may name its own session only)"
_LOCK_ANSWER = _document(
    "`{ok, origin_session_key, task}`", required=("ok", "origin_session_key", "task")
)


class AcquireLockApi(_LongrunView):
    required_scope = WRITE

    @extend_schema_serializer(component_name="LongrunAcquireLockInput")
    class InputSerializer(serializers.Serializer[Any]):
        session = _Key(help_text=_SESSION_HELP)
        task = _task()
        force = _Flag(required=False, default=False)

    @_schema(
        "acquire-lock",
        "Give a session's lock to a task (task_state.py acquire-lock)",
        _LOCK_ANSWER,
        _WRITE,
        request=InputSerializer,
        description="Scope: `longrun:write`. Another task holding it is 409 with the "
        'original\'s `{"ok": false, "error": "session lock exists", …}`, unless `force`.',
    )
    def post(self, request: Request) -> Response:
        values = self._body(self.InputSerializer)
        caller = caller_of(request)
        session = caller.session(values["session"], "session")
        return _answered(
            services.lock_acquire(
                session_key=session,
                name=values["task"],
                force=values["force"],
                confined_to=caller.confined_to,
                now=timezone.now(),
            )
        )


class ReleaseLockApi(_LongrunView):
    required_scope = WRITE

    @extend_schema_serializer(component_name="LongrunReleaseLockInput")
    class InputSerializer(serializers.Serializer[Any]):
        session = _Key(help_text=_SESSION_HELP)
        task = _Key(
            required=False,
            max_length=NAME_MAX_LENGTH,
            help_text="release only if this task holds it",
        )

    @_schema(
        "release-lock",
        "Free a session's lock (task_state.py release-lock)",
        _LOCK_ANSWER,
        _WRITE,
        request=InputSerializer,
        description="Scope: `longrun:write`. Not released (another holder, or none): 200 with "
        "`ok: false` and exit code 1, as the original.",
    )
    def post(self, request: Request) -> Response:
        values = self._body(self.InputSerializer)
        session = caller_of(request).session(values["session"], "session")
        return _answered(services.lock_release(session_key=session, name=_optional(values, "task")))


class ClearApi(_LongrunView):
    required_scope = WRITE

    @extend_schema_serializer(component_name="LongrunClearInput")
    class InputSerializer(serializers.Serializer[Any]):
        task = _Key(
            required=False,
            max_length=NAME_MAX_LENGTH,
            help_text="the task to forget; without it every task (the bridge's only)",
        )

    @_schema(
        "clear",
        "Forget a task, or every task (task_state.py clear)",
        {"type": "string", "description": "`cleared: <task>` or `cleared all tasks`"},
        _WRITE,
        request=InputSerializer,
        description="Scope: `longrun:write`. The task, its locks and its log are deleted.",
    )
    def post(self, request: Request) -> Response:
        values = self._body(self.InputSerializer)
        name = _optional(values, "task")
        if not name:
            _for_every_session(request, "clear without a task")
            return _answered(services.tasks_clear_all())
        return _answered(services.task_clear(name=name, confined_to=caller_of(request).confined_to))


# --- validate_task_start.py and the foreground heartbeat (§7.2–§7.8) -----------------------------


class ValidateTaskStartApi(_LongrunView):
    class QuerySerializer(serializers.Serializer[Any]):
        task = _task()
        expect_session_key = _Key(
            required=False, help_text="the real session key the task must be bound to"
        )
        expect_state = serializers.ListField(
            child=_State(),
            required=False,
            max_length=len(STATES),
            help_text="repeatable; default analyzing, executing, waiting",
        )

    @_schema(
        "validate-task-start",
        "Did the task really start in its target session? (validate_task_start.py)",
        _document(
            "`{ok, task, state, …, errors, message}`; a task not found (or another session's) "
            "is `{ok: false, error: task_not_found, …}` with exit code 1, as the original",
            required=("ok", "task", "message"),
        ),
        {400: _ONE_TASK[400], 403: _ONE_TASK[403]},
        query=QuerySerializer,
        description="Scope: `longrun:read`. Only `ok: true` lets the agent say the mode is "
        "on; a failed validation is 200 with exit code 2.",
    )
    def get(self, request: Request) -> Response:
        values = self._query(self.QuerySerializer)
        return _answered(
            selectors.task_start_validation(
                name=values["task"],
                expect_session_key=_optional(values, "expect_session_key"),
                expect_states=values.get("expect_state", ()),
                confined_to=caller_of(request).confined_to,
            )
        )


_FOREGROUND_ERRORS: _Errors = {
    **_ONE_TASK,
    409: (
        "`missing origin_session_key for task: <t>`: an analyzing or executing task without "
        "a session key (exit 4)",
        ("CONFLICT",),
    ),
}


class ForegroundCheckApi(_LongrunView):
    @_schema(
        "check-foreground-progress",
        "Is a visible progress update due now? (check_foreground_progress.py)",
        _document("`{task, …, due, reason}`", required=("task", "due", "reason")),
        _FOREGROUND_ERRORS,
        query=_TaskQuery,
        description="Scope: `longrun:read`. Exit code 1 when due.",
    )
    def get(self, request: Request) -> Response:
        values = self._query(_TaskQuery)
        return _answered(
            selectors.foreground_check(
                name=values["task"], now=timezone.now(), confined_to=caller_of(request).confined_to
            )
        )


class ProgressUpdateApi(_LongrunView):
    @_schema(
        "build-progress-update",
        "The short progress message of a task (build_progress_update.py)",
        _document(
            "`{task, session_label, origin_session_key, state, message}`",
            required=("task", "message"),
        ),
        _ONE_TASK,
        query=_TaskQuery,
        description="Scope: `longrun:read`. 正在看什么 / 刚确认什么 / 下一步是什么.",
    )
    def get(self, request: Request) -> Response:
        values = self._query(_TaskQuery)
        return _answered(
            selectors.progress_update(
                name=values["task"], confined_to=caller_of(request).confined_to
            )
        )


class ForegroundTickApi(_LongrunView):
    @_schema(
        "foreground-tick",
        "The check, and the message when it is due (foreground_tick.py)",
        _document("`{task, due, check, message, delivery, sessionKey, session_label, state}`"),
        _FOREGROUND_ERRORS,
        query=_TaskQuery,
        description="Scope: `longrun:read`. Exit code 1 when due.",
    )
    def get(self, request: Request) -> Response:
        values = self._query(_TaskQuery)
        return _answered(
            selectors.foreground_tick(
                name=values["task"], now=timezone.now(), confined_to=caller_of(request).confined_to
            )
        )


class WorkCycleTickApi(_LongrunView):
    """A POST although it writes nothing: the step text may be longer than a URL takes."""

    @extend_schema_serializer(component_name="LongrunWorkCycleInput")
    class InputSerializer(serializers.Serializer[Any]):
        task = _task()
        step = _Text(required=False, help_text="what this work cycle just did")

    @_schema(
        "work-cycle-tick",
        "Run after each step: must a progress message go out first? (work_cycle_tick.py)",
        _document(
            "`{task, step, continue, report_now, must_send_now, delivery, sessionKey, "
            "session_label, message, reason, instruction, protocol}`",
            required=("task", "must_send_now", "instruction", "protocol"),
        ),
        {**_FOREGROUND_ERRORS, 411: "", 415: ""},
        request=InputSerializer,
        description="Scope: `longrun:read` (it writes nothing). `must_send_now: true` is the "
        "gate: send the message first (exit code 1). A task that owes no progress answers "
        "`state=<state>` (D-B6).",
    )
    def post(self, request: Request) -> Response:
        values = self._body(self.InputSerializer)
        return _answered(
            selectors.work_cycle_tick(
                name=values["task"],
                step=_optional(values, "step"),
                now=timezone.now(),
                confined_to=caller_of(request).confined_to,
            )
        )


class _StaleQuery(serializers.Serializer[Any]):
    stale_minutes = _minutes(_STALE_HELP)


class _EmitForegroundQuery(_StaleQuery):
    unknown_cooldown_minutes = _minutes(_COOLDOWN_HELP)


class _DispatchQuery(serializers.Serializer[Any]):
    unknown_cooldown_minutes = _minutes(_COOLDOWN_HELP)


def _span(values: dict[str, Any], name: str, unit: str) -> timedelta | None:
    value = values.get(name)
    return None if value is None else timedelta(**{unit: value})


_REPORT_NOTE = (
    "Scope: `longrun:read`. A read-only report: it describes what is due, nothing is sent "
    "(D-B20). A task it cannot handle is an item of `errors` (D-B5). An agent key sees its "
    "session's tasks. It surveys the live tasks in creation order, and the counts are the "
    "page's."
)


class EmitForegroundDueApi(_LongrunView):
    @_schema(
        "emit-foreground-due",
        "The heartbeat events due now (emit_foreground_due.py)",
        _document(
            "`{event_count, events, skipped_unknown_count, skipped_unknown}`",
            required=("event_count", "events"),
        ),
        _REPORT,
        query=_EmitForegroundQuery,
        description=f"{_REPORT_NOTE} Exit code 1 when there are events.",
        paged=True,
    )
    def get(self, request: Request) -> Response:
        values = self._query(_EmitForegroundQuery)
        page = _page(request)
        return _answered(
            selectors.foreground_due_events(
                now=timezone.now(),
                stale=_span(values, "stale_minutes", "minutes"),
                unknown_cooldown=_span(values, "unknown_cooldown_minutes", "minutes"),
                confined_to=caller_of(request).confined_to,
                page=page,
            ),
            page,
        )


class DispatchForegroundDueApi(_LongrunView):
    @_schema(
        "dispatch-foreground-due",
        "The sessions_send plan for the due heartbeats (dispatch_foreground_due.py)",
        _document(
            "`{dispatch_count, dispatches, skipped_unknown_count, skipped_unknown, note}`",
            required=("dispatch_count", "dispatches"),
        ),
        _REPORT,
        query=_DispatchQuery,
        description=f"{_REPORT_NOTE} Exit code 1 when there are dispatches.",
        paged=True,
    )
    def get(self, request: Request) -> Response:
        values = self._query(_DispatchQuery)
        page = _page(request)
        return _answered(
            selectors.foreground_dispatch_plan(
                now=timezone.now(),
                unknown_cooldown=_span(values, "unknown_cooldown_minutes", "minutes"),
                confined_to=caller_of(request).confined_to,
                page=page,
            ),
            page,
        )


# --- keepalive (§7.9) ----------------------------------------------------------------------------


class _KeepaliveQuery(_TaskQuery):
    idle_seconds = _QueryCount(
        required=False, min_value=1, max_value=MAX_THRESHOLD_SECONDS, help_text=_IDLE_HELP
    )


class KeepaliveTickApi(_LongrunView):
    @_schema(
        "keepalive-tick",
        "Has the task been idle too long? (keepalive_tick.py)",
        _document(
            "`{task, …, should_resume, reason, resume_message, instruction}`",
            required=("task", "should_resume", "reason"),
        ),
        _ONE_TASK,
        query=_KeepaliveQuery,
        description="Scope: `longrun:read`. Exit code 1 when it should resume.",
    )
    def get(self, request: Request) -> Response:
        values = self._query(_KeepaliveQuery)
        return _answered(
            selectors.keepalive_tick(
                name=values["task"],
                now=timezone.now(),
                idle=_span(values, "idle_seconds", "seconds"),
                confined_to=caller_of(request).confined_to,
            )
        )


class EmitKeepaliveResumeApi(_LongrunView):
    @_schema(
        "emit-keepalive-resume",
        "The resume event of an idle task (emit_keepalive_resume.py)",
        _document("`{event_count, events}` (and `reason` when none)", required=("event_count",)),
        {
            **_ONE_TASK,
            409: (
                "`missing origin_session_key; cannot emit portable keepalive event` (exit 4)",
                ("CONFLICT",),
            ),
        },
        query=_KeepaliveQuery,
        description="Scope: `longrun:read`. Generated, not sent. Exit code 1 with an event.",
    )
    def get(self, request: Request) -> Response:
        values = self._query(_KeepaliveQuery)
        return _answered(
            selectors.keepalive_resume_event(
                name=values["task"],
                now=timezone.now(),
                idle=_span(values, "idle_seconds", "seconds"),
                confined_to=caller_of(request).confined_to,
            )
        )


class RunKeepaliveOnceApi(_LongrunView):
    required_scope = WRITE

    @extend_schema_serializer(component_name="LongrunRunKeepaliveInput")
    class InputSerializer(serializers.Serializer[Any]):
        idle_seconds = _Count(
            required=False, min_value=1, max_value=MAX_THRESHOLD_SECONDS, help_text=_IDLE_HELP
        )

    @_schema(
        "run-keepalive-once",
        "Plan (or, with longrun.auto_resume, queue) a resume for every idle task "
        "(run_keepalive_once.py)",
        _document(
            "`{scanned_active_tasks, dispatch_count, resumed_count, failed_count, dispatches, "
            "note}`",
            required=("dispatch_count", "dispatches"),
        ),
        _EVERY_SESSION,
        request=InputSerializer,
        description="Scope: `longrun:write`, a key not bound to a session. Celery beat runs "
        "it by itself; this runs it once now. Exit code 1 when a task failed.",
    )
    def post(self, request: Request) -> Response:
        _for_every_session(request, "run-keepalive-once")
        values = self._body(self.InputSerializer)
        return _answered(
            services.keepalive_run_once(
                now=timezone.now(),
                idle=_span(values, "idle_seconds", "seconds"),
                by=caller_of(request).name,
            )
        )


# --- the watchdog and recovery (§7.10) -----------------------------------------------------------


def _report_view(
    operation: str,
    summary: str,
    answer: dict[str, Any],
    read: Callable[..., Answer],
) -> type[_LongrunView]:
    class View(_LongrunView):
        @_schema(
            operation,
            summary,
            answer,
            _REPORT,
            query=_StaleQuery,
            description=f"{_REPORT_NOTE} Exit code 1 when a task is due.",
            paged=True,
        )
        def get(self, request: Request) -> Response:
            values = self._query(_StaleQuery)
            page = _page(request)
            return _answered(
                read(
                    now=timezone.now(),
                    stale=_span(values, "stale_minutes", "minutes"),
                    confined_to=caller_of(request).confined_to,
                    page=page,
                ),
                page,
            )

    View.__name__ = View.__qualname__ = (
        "".join(part.title() for part in operation.split("-")) + "Api"
    )
    return View


WatchdogApi = _report_view(
    "watchdog",
    "Which tasks need recovery, which a progress update (watchdog.py check --json)",
    _document("`{due, progress, ok}`", required=("due", "progress", "ok")),
    selectors.watchdog_check,
)
RecoverDueTasksApi = _report_view(
    "recover-due-tasks",
    "Each overdue task with its recovery suggestion (recover_due_tasks.py --json)",
    _document("`{due_count, progress_count, items}`", required=("due_count", "items")),
    selectors.recovery_report,
)
EmitRecoveryMessageApi = _report_view(
    "emit-recovery-message",
    "The recovery message of each overdue task (emit_recovery_message.py --json)",
    _document("`{due_count, progress_count, messages}`", required=("due_count", "messages")),
    selectors.recovery_messages,
)
BuildSessionsSendPayloadsApi = _report_view(
    "build-sessions-send-payloads",
    "sessions_send payloads for the overdue tasks, not sent (build_sessions_send_payloads.py)",
    _document("`{due_count, progress_count, tool, payloads}`", required=("due_count", "payloads")),
    selectors.sessions_send_payloads,
)


class RunWatchdogOnceApi(_LongrunView):
    required_scope = WRITE

    @extend_schema_serializer(component_name="LongrunRunWatchdogInput")
    class InputSerializer(serializers.Serializer[Any]):
        stale_minutes = _minutes(_STALE_HELP, _Count)

    @_schema(
        "run-watchdog-once",
        "Send each overdue task its recovery message or heartbeat (run_watchdog_once.py)",
        _document(
            "`{due_count, progress_count, tool, payloads}`, each payload with its outbox "
            "message and status",
            required=("due_count", "payloads"),
        ),
        _EVERY_SESSION,
        request=InputSerializer,
        description="Scope: `longrun:write`, a key not bound to a session. Messages go through "
        "the outbox and count as sent only when the channel confirms (D-B10, D-B20). Celery "
        "beat runs it by itself; this runs it once now. Exit code 1 when a payload was made.",
    )
    def post(self, request: Request) -> Response:
        _for_every_session(request, "run-watchdog-once")
        values = self._body(self.InputSerializer)
        return _answered(
            services.watchdog_run_once(
                now=timezone.now(),
                stale=_span(values, "stale_minutes", "minutes"),
                by=caller_of(request).name,
            )
        )


class CleanupStateApi(_LongrunView):
    required_scope = WRITE

    @extend_schema_serializer(component_name="LongrunCleanupInput")
    class InputSerializer(serializers.Serializer[Any]):
        apply = _Flag(required=False, default=False, help_text="without it, only a report")
        drop_task = serializers.ListField(
            child=_task(), required=False, max_length=_DROP_MAX, help_text="--drop-task"
        )
        drop_test_prefix = serializers.ListField(
            child=_Key(max_length=NAME_MAX_LENGTH),
            required=False,
            max_length=_DROP_MAX,
            help_text="--drop-test-prefix, beside the default 回归-",
        )

    @_schema(
        "cleanup-state",
        "Drop test and broken tasks, archive old finished ones, repair locks (cleanup_state.py)",
        _document(
            "`{normalized, dropped, archived, lock_repairs, task_count_before, task_count_after, "
            "lock_count_before, lock_count_after, apply}`",
            required=("dropped", "apply"),
        ),
        _EVERY_SESSION,
        request=InputSerializer,
        description="Scope: `longrun:write`, a key not bound to a session. Nothing is deleted "
        "without `apply` (D-B16).",
    )
    def post(self, request: Request) -> Response:
        _for_every_session(request, "cleanup-state")
        values = self._body(self.InputSerializer)
        return _answered(
            services.tasks_cleanup(
                now=timezone.now(),
                apply=values["apply"],
                drop_tasks=values.get("drop_task", ()),
                drop_test_prefixes=values.get("drop_test_prefix", ()),
            )
        )


# --- the trigger (§2, D-B1) ----------------------------------------------------------------------


class DetectTriggerApi(_LongrunView):
    @extend_schema_serializer(component_name="LongrunDetectTriggerInput")
    class InputSerializer(serializers.Serializer[Any]):
        message = _Text(max_length=_TRIGGER_MAX, help_text="the user's message, verbatim")
        session_key = _Key(
            required=False,
            help_text="the session it came from (to find its active task); an agent key's own",
        )

    @_schema(
        "detect-trigger",
        "Does a user message enter long-run mode, continue the session's task, or neither?",
        _document(
            "`{mode: enter | continue | ordinary, trigger, phrase, session_key, active_task, "
            "active_state, reason}`",
            required=("mode", "trigger", "reason"),
        ),
        {
            400: "a field breaks its rule (named)",
            403: "the key lacks `longrun:read`, or an agent key names another session",
            411: "",
            415: "",
        },
        request=InputSerializer,
        description="Scope: `longrun:read`. Only a configured phrase asked for enters "
        "(`longrun.trigger_phrases`; a negation or a question does not, D-B1); any other "
        "message in a session with an active long task continues it. Exit code 1 when the "
        "agent has something to do, 0 for an ordinary message.",
    )
    def post(self, request: Request) -> Response:
        values = self._body(self.InputSerializer)
        session = caller_of(request).session(_optional(values, "session_key"), "session_key")
        return _answered(selectors.message_mode(message=values["message"], session_key=session))
