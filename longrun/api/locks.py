"""task_state.py's session locks (§7.1): locks, acquire-lock and release-lock."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from longrun import selectors, services
from longrun.api._base import _answered, _LongrunView, _optional, _page
from longrun.api._fields import _Flag, _Key, _task
from longrun.api._schema import _WRITE, _document, _schema
from longrun.models import NAME_MAX_LENGTH
from xworkmate.auth import caller_of


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


_SESSION_HELP = "the session key of the lock (an agent key may name its own session only)"
_LOCK_ANSWER = _document(
    "`{ok, origin_session_key, task}`", required=("ok", "origin_session_key", "task")
)


class AcquireLockApi(_LongrunView):
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
        'original\'s `{"ok": false, "error": "session lock exists", …}`, unless `force`; '
        "a task not in the store (or another session's) is 404 `task not found: <t>` "
        "(D-B28).",
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
        "`ok: false` and exit code 1, as the original. `task` is the task asked for, null "
        "without one, as the original (`locks` names the holder).",
    )
    def post(self, request: Request) -> Response:
        values = self._body(self.InputSerializer)
        session = caller_of(request).session(values["session"], "session")
        return _answered(services.lock_release(session_key=session, name=_optional(values, "task")))
