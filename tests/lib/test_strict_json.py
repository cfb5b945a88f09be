"""The one strict JSON decoding of request bodies: its limits, exactly."""

from __future__ import annotations

import sys

import pytest

from xworkmate.lib.errors import InputError
from xworkmate.lib.strict_json import MAX_DEPTH, decode_json, text_problem


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def test_it_accepts_exactly_max_depth_levels_and_refuses_one_more():
    assert MAX_DEPTH == 128
    decode_json(nested(MAX_DEPTH))
    with pytest.raises(InputError, match="nested too deeply: at most 128 levels"):
        decode_json(nested(MAX_DEPTH + 1))


@pytest.mark.parametrize("number", [2**1023, -(2**1023), int(sys.float_info.max), sys.float_info.max, 5e-324])
def test_it_accepts_every_number_a_64_bit_float_can_hold(number):
    assert decode_json(repr(number).encode()) == number


@pytest.mark.parametrize("text", [str(2**1024), str(-(2**1024)), "1e309", "-1e309", "9" * 310])
def test_it_refuses_numbers_beyond_a_64_bit_float(text):
    with pytest.raises(InputError, match=r"^request body: must be a number within the range"):
        decode_json(text.encode())


def test_it_reports_the_first_problem_in_document_order():
    raw = b'{"a": [1, {"b": "ok", "c": "\\u0000"}], "d": NaN}'
    with pytest.raises(InputError, match=r"^a\[1\]\.c: must not contain a NUL character$"):
        decode_json(raw)


def test_text_problem_names_the_rule():
    assert text_problem("plain 😀") is None
    assert text_problem("a\x00") == "must not contain a NUL character"
    assert text_problem("\udc80") == "must not contain a lone surrogate (U+DC80)"
