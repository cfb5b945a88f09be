"""The API kit's input side: strict JSON fields and the query's values, once for every view.

A JSON body is decoded strictly (xworkmate.parsers); these serializer fields
then take each value as JSON typed it. DRF's own fields turn `7` into "7",
`"true"` into True and `"10"` into 10, so a number would pass where a string
was asked and a client's wrong type would go unnoticed; here a value of
another type is refused with the field's name, as every error names it.

- `StrictCharField`: a string (a number or a boolean is refused); DRF's other
  options (trimming, blank, lengths) as given.
- `KeyField`: a session key, task id or name: a string kept as sent, not
  blank once trimmed as JavaScript trims (D-K7), at most `max_length`
  characters (KEY_MAX_LENGTH unless said); documented as the pattern
  NOT_BLANK_PATTERN and that maxLength.
- `StrictBooleanField`: true or false as JSON has them.
- `StrictIntegerField`: a whole number as JSON has it (`10`, or `10.0` as
  JSON Schema counts it).
- `QueryIntegerField`: a whole number in a query string: ASCII digits only.
- `query_values`: a query string as a plain dict for a serializer, each
  parameter given once (a list field takes every value).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from django.utils.translation import gettext as _
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from xworkmate.lib.jstext import KEY_MAX_LENGTH, NOT_BLANK_PATTERN, js_trim

__all__ = [
    "KeyField",
    "QueryIntegerField",
    "StrictBooleanField",
    "StrictCharField",
    "StrictIntegerField",
    "list_fields",
    "query_values",
]


class StrictCharField(serializers.CharField):
    """A string field that refuses a number instead of turning it into text."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return str(super().to_internal_value(data))


class KeyField(StrictCharField):
    """A session key (or a task's id or name): a string (a number is refused, not turned
    into text), not blank once trimmed as JavaScript trims (D-K7), at most `max_length`
    characters as sent. Kept as sent: the caller trims it where the contract does."""

    def __init__(self, *, max_length: int = KEY_MAX_LENGTH, **kwargs: Any) -> None:
        # Trimmed once, as JavaScript trims, not by DRF's str.strip.
        super().__init__(max_length=max_length, trim_whitespace=False, **kwargs)

    def to_internal_value(self, data: Any) -> str:
        text = super().to_internal_value(data)
        if not js_trim(text):
            self.fail("blank")
        return text


class _KeySchema(OpenApiSerializerFieldExtension):  # type: ignore[no-untyped-call]
    """A key as the schema states it: not blank, no NUL, at most its own length."""

    target_class = KeyField
    match_subclasses = True

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        return {"type": "string", "pattern": NOT_BLANK_PATTERN, "maxLength": self.target.max_length}


@extend_schema_field({"type": "boolean"})
class StrictBooleanField(serializers.BooleanField):
    """true or false, as JSON has them (a string or a number is refused)."""

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class StrictIntegerField(serializers.IntegerField):
    """A whole number as JSON has it (`10`, or `10.0` as JSON Schema counts it); a string,
    a boolean or a fraction is refused."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, float) and data.is_integer():
            data = int(data)
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return int(super().to_internal_value(data))


class QueryIntegerField(serializers.IntegerField):
    """A whole number in a query: ASCII digits only (`²` and `1.0` are no numbers here)."""

    def to_internal_value(self, data: Any) -> int:
        # Digits beyond a dozen are out of every range here; int() is not asked.
        if not isinstance(data, str) or not data.isascii() or not data.isdigit() or len(data) > 12:
            self.fail("invalid")
        return int(super().to_internal_value(data))


def list_fields(serializer: serializers.Serializer[Any]) -> set[str]:
    """The names of a serializer's list fields: the parameters that take every value."""
    return {
        name for name, field in serializer.fields.items()
        if isinstance(field, serializers.ListField)
    }


def query_values(
    given: Iterable[tuple[str, list[str]]], *, lists: Collection[str] = ()
) -> dict[str, Any]:
    """A query string (`QueryDict.lists()`) as a plain dict for a serializer.

    A plain dict: given a QueryDict, DRF reads `?stale_minutes=` as "not given"
    and keeps the last of repeated values. A parameter named in `lists` takes
    every value; any other given twice is refused (which one would count is not
    the caller's choice).
    """
    values: dict[str, Any] = {}
    for name, each in given:
        if name in lists:
            values[name] = each
        elif len(each) > 1:
            raise ValidationError({name: _("given more than once (it takes one value)")})
        else:
            values[name] = each[0]
    return values
