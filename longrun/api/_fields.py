"""The fields of the long-run endpoints: strict JSON types, limits as the services keep them."""

from __future__ import annotations

import re
from typing import Any

from django.core.validators import RegexValidator
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from longrun.models import NAME_MAX_LENGTH, TEXT_MAX_LENGTH
from longrun.policies.states import STATES
from longrun.policies.timing import MAX_THRESHOLD_MINUTES
from xworkmate.api_fields import (
    QueryIntegerField,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
)
from xworkmate.lib.jstext import KEY_MAX_LENGTH, NOT_BLANK_PATTERN, js_trim

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


class _Text(StrictCharField):
    """A string, kept as sent (blank allowed, D-B3); a number is refused, not turned into text."""

    def __init__(self, *, max_length: int = TEXT_MAX_LENGTH, **kwargs: Any) -> None:
        kwargs.setdefault("allow_blank", True)
        super().__init__(max_length=max_length, trim_whitespace=False, **kwargs)


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


# true or false, whole numbers as JSON has them, digits in a query: the kernel's kit.
_Flag = StrictBooleanField
_Count = StrictIntegerField
_QueryCount = QueryIntegerField


def _minutes(help_text: str, field: type[serializers.IntegerField] = _QueryCount) -> Any:
    return field(required=False, min_value=1, max_value=MAX_THRESHOLD_MINUTES, help_text=help_text)


_STALE_HELP = "--stale-minutes; default the configured longrun.stale (10m)"
_COOLDOWN_HELP = "--unknown-cooldown-minutes; default the configured longrun.unknown_cooldown (2m)"
_IDLE_HELP = "--idle-seconds; default the configured longrun.idle (60s)"


class _TaskQuery(serializers.Serializer[Any]):
    task = _task()


class _StaleQuery(serializers.Serializer[Any]):
    stale_minutes = _minutes(_STALE_HELP)
