"""task_state.py's task records (§7.1): set, show, list and clear."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from longrun import selectors, services
from longrun.api._base import _answered, _for_every_session, _LongrunView, _optional, _page
from longrun.api._fields import _Flag, _Key, _ProgressEvery, _State, _task, _TaskQuery, _Text
from longrun.api._schema import _ONE_TASK, _RECORD_SCHEMA, _WRITE, _schema
from longrun.models import LABEL_MAX_LENGTH, NAME_MAX_LENGTH
from xworkmate.auth import caller_of

# --- task_state.py (§7.1) ------------------------------------------------------------------------


class TaskSetApi(_LongrunView):
    """`task_state.py set`: register or update a task, and hold or release its session's lock."""

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


class ClearApi(_LongrunView):
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
