"""The trigger (§2, D-B1): detect-trigger."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from longrun import selectors
from longrun.api._base import _answered, _LongrunView, _optional
from longrun.api._fields import _TRIGGER_MAX, _Key, _Text
from longrun.api._schema import _document, _schema
from xworkmate.auth import caller_of

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
