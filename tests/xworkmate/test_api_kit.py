"""The API kit's fields, query reading and refusal answer (xworkmate.api_fields, api_errors)."""

from __future__ import annotations

import pytest
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from xworkmate.api_errors import refusal_response
from xworkmate.api_fields import (
    KeyField,
    QueryIntegerField,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    list_fields,
    query_values,
)
from xworkmate.lib.errors import ConflictError, InputError


class _Input(serializers.Serializer):  # type: ignore[type-arg]
    text = StrictCharField(required=False)
    key = KeyField(required=False, max_length=8)
    flag = StrictBooleanField(required=False)
    count = StrictIntegerField(required=False)
    tags = serializers.ListField(child=serializers.CharField(), required=False)


def _errors(data):
    form = _Input(data=data)
    assert not form.is_valid()
    return {name: [str(e) for e in errors] for name, errors in form.errors.items()}


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"text": 7}, "text"),
        ({"key": 7}, "key"),
        ({"key": " \ufeff "}, "key"),  # blank once trimmed as JavaScript trims
        ({"key": "123456789"}, "key"),
        ({"flag": "true"}, "flag"),
        ({"flag": 1}, "flag"),
        ({"count": "10"}, "count"),
        ({"count": True}, "count"),
        ({"count": 1.5}, "count"),
    ],
)
def test_it_refuses_a_value_of_another_type_naming_the_field(data, field):
    assert list(_errors(data)) == [field]


def test_it_takes_values_as_json_types_them():
    form = _Input(data={"text": "a", "key": " k ", "flag": False, "count": 10.0})
    assert form.is_valid(), form.errors
    assert form.validated_data == {"text": "a", "key": " k ", "flag": False, "count": 10}


def test_a_query_integer_is_ascii_digits_only():
    field = QueryIntegerField()
    assert field.run_validation("12") == 12
    for bad in ("1.0", "²", "-1", "1234567890123"):
        with pytest.raises(ValidationError):
            field.run_validation(bad)


def test_query_values_refuses_a_repeated_parameter_except_a_list():
    lists = list_fields(_Input())
    assert lists == {"tags"}
    assert query_values([("tags", ["a", "b"]), ("text", ["x"])], lists=lists) == {
        "tags": ["a", "b"],
        "text": "x",
    }
    with pytest.raises(ValidationError) as refused:
        query_values([("text", ["x", "y"])], lists=lists)
    assert refused.value.detail == {"text": "given more than once (it takes one value)"}


def test_a_refusal_answers_its_code_message_and_status():
    plain = refusal_response(InputError("runId required"))
    assert (plain.status_code, plain.data) == (
        400,
        {"error": {"code": "INVALID_REQUEST", "message": "runId required"}},
    )
    wrapped = refusal_response(ConflictError("mapped elsewhere"), envelope=True)
    assert (wrapped.status_code, wrapped.data) == (
        409,
        {"ok": False, "error": {"code": "CONFLICT", "message": "mapped elsewhere"}},
    )
    assert refusal_response(InputError("gone"), status=404).status_code == 404
