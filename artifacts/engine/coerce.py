"""Input coercion helpers of §3, with the D-A8 type rule for numeric options.

The original runs on JavaScript, so "trim", ``Number()`` and ``parseInt`` have JS
semantics here; Python's ``str.strip``/``float`` differ at the edges (§3 Python note).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from typing import TypeVar

from xworkmate.lib.errors import InputError
from xworkmate.lib.jstext import js_trim
from xworkmate.lib.paging import MAX_LISTED_FILES

__all__ = [
    "ABSENT",
    "file_limit",
    "js_key_order",
    "js_number",
    "js_object_entries",
    "js_parse_int",
    "non_negative_integer",
    "non_negative_number",
    "optional_boolean",
    "optional_string",
    "param",
    "positive_integer",
    "required_string",
    "typed_string",
]


_V = TypeVar("_V")


class _Absent:
    """JS ``undefined``: a key that is not in the params at all."""

    _instance: _Absent | None = None

    def __new__(cls) -> _Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = _Absent()

def param(params: Mapping[str, object], key: str) -> object:
    """``params[key]``, or ABSENT when the caller did not send the key at all."""
    return params.get(key, ABSENT)


def optional_string(value: object) -> str:
    """exportArtifacts.ts ``optionalString``: strings only, trimmed; anything else is ``""``."""
    return js_trim(value) if isinstance(value, str) else ""


def typed_string(value: object, field: str) -> str:
    """A string param, trimmed; absent or null is ""; any other type is refused.

    The original turned a number or an object into "" silently (so a numeric
    ``openclawSessionKey`` was reported as missing and ``workspaceDir: 123`` chose
    the default workspace); a wrong type is now an error naming the field. A NUL
    character is refused too: no path or key of the service may hold one.
    """
    if value is None or value is ABSENT:
        return ""
    if not isinstance(value, str):
        raise InputError(f"{field} must be a string")
    if "\0" in value:
        raise InputError(f"{field} must not contain a NUL character")
    return js_trim(value)


def required_string(value: object, message: str, field: str) -> str:
    """A string the call cannot do without; a missing, empty or non-string one is
    ``message`` (the contract's ``<field> required``, cases B17 and C38)."""
    text = typed_string(value, field) if isinstance(value, str) else ""
    if not text:
        raise InputError(message)
    return text


def optional_boolean(value: object, fallback: bool) -> bool:
    return value if isinstance(value, bool) else fallback


# ASCII digits only: JavaScript's Number("٣") is NaN, while Python's \d and float() take it.
_DECIMAL_LITERAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
_RADIX_LITERAL = re.compile(r"0([xXoObB])([0-9a-fA-F]+)")
_RADIX = {"x": 16, "o": 8, "b": 2}


def _string_to_number(text: str) -> float:
    """``Number(string)`` per ECMAScript StringToNumber; NaN when it is not numeric."""
    body = js_trim(text)
    if body == "":
        return 0.0
    if body in ("Infinity", "+Infinity"):
        return math.inf
    if body == "-Infinity":
        return -math.inf
    if _DECIMAL_LITERAL.fullmatch(body):
        return float(body)
    radix = _RADIX_LITERAL.fullmatch(body)
    if radix:
        try:
            return float(int(radix.group(2), _RADIX[radix.group(1).lower()]))
        except (ValueError, OverflowError):
            return math.nan
    return math.nan


def js_number(value: object) -> float:
    """``Number(value)`` for JSON values (NaN where JS gives NaN)."""
    if value is ABSENT:
        return math.nan
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        try:
            return float(value)
        except OverflowError:
            # A JSON integer beyond double range is Infinity in JS.
            return math.inf if value > 0 else -math.inf
    if isinstance(value, str):
        return _string_to_number(value)
    if isinstance(value, list):
        # Number([]) is 0, Number([x]) is Number(String(x)), longer arrays are NaN.
        if not value:
            return 0.0
        if len(value) == 1:
            inner = value[0]
            if inner is None:
                return 0.0
            if isinstance(inner, list | str | int | float):
                return js_number(inner if isinstance(inner, str | list) else str(inner))
        return math.nan
    return math.nan


def _typed_number(value: object, field: str) -> float:
    """D-A8: numbers and numeric strings coerce as in JS; every other type is refused.

    ``ABSENT`` (key not sent) stays NaN so the caller falls back to its default.
    Booleans, null, arrays, objects and strings that are not numbers are refused with a
    message naming the field.
    """
    if value is ABSENT:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise InputError(f"{field} must be a number")
    number = js_number(value)
    if isinstance(value, str) and math.isnan(number):
        raise InputError(f"{field} must be a number")
    return number


def positive_integer(value: object, field: str, secondary: object, fallback: int) -> int:
    """``positiveInteger(primary, secondary, fallback)`` with D-A8 on the primary value."""
    for number in (_typed_number(value, field), js_number(secondary)):
        if math.isfinite(number) and number > 0:
            return math.floor(number)
    return fallback


def file_limit(value: object, configured: int, fallback: int) -> int:
    """`maxFiles` as ``positiveInteger`` reads it, and never above MAX_LISTED_FILES (D-K13).

    A larger one lists that many, with the contract's limit warning, as any
    smaller limit does: the caller learns that files were left out.
    """
    return min(positive_integer(value, "maxFiles", configured, fallback), MAX_LISTED_FILES)


def non_negative_integer(value: object, field: str, secondary: object, fallback: int) -> int:
    for number in (_typed_number(value, field), js_number(secondary)):
        if math.isfinite(number) and number >= 0:
            return math.floor(number)
    return fallback


def non_negative_number(value: object, field: str, fallback: float) -> float:
    number = _typed_number(value, field)
    if math.isfinite(number) and number >= 0:
        return number
    return fallback


_PARSE_INT = re.compile(r"[+-]?\d+", re.ASCII)


def js_parse_int(text: str) -> float:
    """``Number.parseInt(text, 10)``: the leading decimal digits, NaN when there are none."""
    match = _PARSE_INT.match(js_trim(text))
    if not match:
        return math.nan
    return float(int(match.group(0)))


def _is_array_index(key: str) -> bool:
    return (key == "0" or (key[:1] in "123456789" and key.isdigit() and key.isascii())) and (
        int(key) < 2**32 - 1
    )


def js_object_entries(obj: Mapping[str, _V]) -> Iterator[tuple[str, _V]]:
    """``Object.entries`` order: array-index keys ascending first, then insertion order."""
    keys = list(obj.keys())
    indexes = sorted((k for k in keys if _is_array_index(k)), key=int)
    yield from ((k, obj[k]) for k in indexes)
    yield from ((k, obj[k]) for k in keys if not _is_array_index(k))


def js_key_order(obj: dict[str, _V]) -> dict[str, _V]:
    """Rebuild ``obj`` in the key order a JS object literal would serialise."""
    return dict(js_object_entries(obj))
