"""The plans API's fields: schedules, PLAN.md lines and texts, a cron.add job, a plan."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.utils import extend_schema_field, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from plans.conf import plans_conf
from plans.models import Entry
from plans.runpolicy import MISSED_POLICIES, OVERLAP_POLICIES
from plans.schedule.schema import STRIPPED_CLASS, schedule_schema
from xworkmate.api_fields import StrictCharField


class _ScheduleField(serializers.DictField):
    """A schedule object; the scheduler checks it (its messages are the answer's)."""

    preview = False  # a job's schedule: everyMs a whole number


class _PreviewScheduleField(_ScheduleField):
    preview = True  # the preview floors a fractional everyMs (D-C10)


class _ScheduleSchema(OpenApiSerializerFieldExtension):  # type: ignore[no-untyped-call]
    """A schedule's shape per kind, with this service's plans.min_every (D-K15)."""

    target_class = _ScheduleField
    match_subclasses = True

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        min_every = plans_conf().min_every
        return schedule_schema(
            min_every_ms=int(min_every.total_seconds() * 1000), preview=self.target.preview
        )


# Not blank once stripped as DRF strips (Python's str.strip, STRIPPED_CLASS), and no
# NUL: the service refuses one in any string (D-K15).
@extend_schema_field(
    {"type": "string", "pattern": f"^[^\\u0000]*[^\\u0000{STRIPPED_CLASS}][^\\u0000]*$"}
)
class _TextField(StrictCharField):
    """The kit's strict string, documented with the plans fields' pattern."""


# PLAN.md values the API takes are one line each, without braces: the entry's rules
# (R6, R4) would refuse a line break or a template placeholder ({{…}}, {ARCHIVE_ID})
# later, after the schema said yes. No brace at all keeps the schema's pattern
# plain (a pattern with lookaheads stalls schema-driven clients and fuzzers); no
# NUL, as in every string (D-K15).
_LINE_CHARS = "^\\u0000\\n\\r{}"


@extend_schema_field(
    {
        "type": "string",
        "pattern": f"^[{_LINE_CHARS}]*[{_LINE_CHARS}{STRIPPED_CLASS}][{_LINE_CHARS}]*$",
    }
)
class _PlanLineField(_TextField):
    """One line of a PLAN.md entry: text, not blank, no line break, no brace."""

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if "\n" in value or "\r" in value:
            raise ValidationError("must be one line (no line break)")
        if "{" in value or "}" in value:
            raise ValidationError("must not contain { or } (the template's placeholder marks)")
        return value


_NAME_MAX, _TEXT_MAX, _STEP_MAX, _MAX_STEPS = 200, 4000, 2000, 20


_PLAN_SCHEMA = {
    "type": "object",
    "description": "a plan: one Task_ID of a PLAN.md, its protocol state and its job "
    "(OpenClaw's CronJob, §8.1); absent values are left out",
    "required": ["taskId", "taskName", "archiveId", "planPath", "state", "revision"],
    "properties": {
        "taskId": {"type": "string", "format": "uuid"},
        "taskName": {"type": "string"},
        "archiveId": {"type": "string"},
        "planPath": {"type": "string"},
        "sessionKey": {"type": "string"},
        "agentId": {"type": "string"},
        "state": {"type": "string", "enum": [code for code, _ in Entry.STATES]},
        "revision": {"type": "object"},
        "confirmedRevision": {"type": "integer"},
        "awaitingConfirmation": {"type": "boolean"},
        # D-C25: when the revision awaiting confirmation expires, or that it has (then the
        # agent proposes again), and what the job's confirmation bound.
        "confirmationExpiresAt": {"type": "string", "format": "date-time"},
        "confirmationExpired": {
            "type": "object",
            "properties": {
                "revision": {"type": "integer"},
                "expiredAt": {"type": "string", "format": "date-time"},
                "message": {"type": "string"},
            },
        },
        "confirmation": {
            "type": "object",
            "properties": {
                "revision": {"type": "integer"},
                "revisionSha256": {"type": "string"},
                "entrySha256": {"type": "string"},
                "schedule": {"type": "object"},
                "how": {"type": "string"},
                "confirmedAt": {"type": "string", "format": "date-time"},
            },
        },
        "schedule": {"type": "object"},
        # The run policies of the current revision (D-C23, D-C24); the job's own are in
        # `job` when they are not the defaults.
        "missed": {"type": "string", "enum": list(MISSED_POLICIES)},
        "maxLatenessSeconds": {"type": "integer"},
        "overlap": {"type": "string", "enum": list(OVERLAP_POLICIES)},
        "job": {"type": "object"},
        "reviewUrl": {"type": "string"},
    },
}


@extend_schema_field(_PLAN_SCHEMA)
class _PlanField(serializers.JSONField):
    pass


_PlanOut = inline_serializer("Plan", {"plan": _PlanField()})


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "name": {"type": "string"},
            "sessionTarget": {"type": "string", "enum": ["isolated"]},
            "wakeMode": {"type": "string", "enum": ["now"]},
            "enabled": {"type": "boolean", "enum": [True]},
            "payload": {
                "type": "object",
                "additionalProperties": False,
                "required": ["kind"],
                "properties": {
                    "kind": {"type": "string", "enum": ["agentTurn"]},
                    "message": {"type": "string", "maxLength": 4000},
                    # Seconds a run may take before it ends as timed out (§8.5); 0: no
                    # limit; absent: 60 minutes.
                    "timeoutSeconds": {"type": "number", "minimum": 0, "maximum": 10**9},
                },
            },
            "delivery": {
                "type": "object",
                "additionalProperties": False,
                "required": ["mode", "bestEffort"],
                "properties": {
                    "mode": {"type": "string", "enum": ["none"]},
                    "bestEffort": {"type": "boolean", "enum": [True]},
                },
            },
        },
    }
)
class _JobField(serializers.DictField):
    """A cron.add job; the service names the rule a wrong shape breaks (D-C7)."""
