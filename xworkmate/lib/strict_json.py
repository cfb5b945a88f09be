"""The one JSON decoder for every request body, and the one text rule for every request string.

Python's ``json`` module accepts what the service cannot handle further on:
``NaN`` / ``Infinity`` (not JSON), integers of thousands of digits (``int()``
refuses more than 4300 and ``float()`` overflows far earlier), nesting deep
enough to exhaust the interpreter's stack, and strings holding NUL or lone
surrogates (no path, database or UTF-8 encoder takes them). Each of these is
refused here with a message naming the field and the rule, so no endpoint ever
sees such a value and none can answer 500 for it.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterator
from typing import Any

from xworkmate.lib.errors import InputError

__all__ = ["MAX_DEPTH", "decode_json", "text_problem"]

# Arrays and objects nest at most this deep. Every value the bridge and the
# platform send is far shallower; the bound keeps parsing, validation and
# re-encoding (all recursive somewhere) well inside the interpreter's stack.
MAX_DEPTH = 128

# The numbers JavaScript (the bridge, the platform) can represent: a JSON
# number outside the range of a 64-bit float is not one any caller meant.
_MAX_FLOAT_INT = int(sys.float_info.max)
_MAX_FLOAT_DIGITS = len(str(_MAX_FLOAT_INT))

_BAD_TEXT = re.compile("[\x00\ud800-\udfff]")


class _Refused:
    """A value the decoder met but will not hand on; the walk reports it by field."""

    __slots__ = ("rule",)

    def __init__(self, rule: str) -> None:
        self.rule = rule


_NUMBER_RANGE = "must be a number within the range of a 64-bit float"


def _parse_int(text: str) -> int | _Refused:
    digits = text.lstrip("-")
    if len(digits) > _MAX_FLOAT_DIGITS:
        # Checked by length first: int() of thousands of digits raises ValueError.
        return _Refused(_NUMBER_RANGE)
    value = int(text)
    return _Refused(_NUMBER_RANGE) if abs(value) > _MAX_FLOAT_INT else value


def _parse_float(text: str) -> float | _Refused:
    value = float(text)  # 1e400 parses as inf
    return value if math.isfinite(value) else _Refused(_NUMBER_RANGE)


def _parse_constant(name: str) -> _Refused:
    return _Refused(f"{name} is not valid JSON (numbers must be finite)")


def text_problem(value: str) -> str | None:
    """Why a request string is refused (NUL, lone surrogate), or None when it is fine."""
    match = _BAD_TEXT.search(value)
    if match is None:
        return None
    if match.group() == "\x00":
        return "must not contain a NUL character"
    return f"must not contain a lone surrogate (U+{ord(match.group()):04X})"


def _field(path: str, key: object) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def _children(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            problem = text_problem(key)
            if problem is not None:
                raise InputError(f"{path or 'request body'}: a key {problem}")
            yield _field(path, key), item
    else:
        for index, item in enumerate(value):
            yield _field(path, index), item


def _too_deep() -> InputError:
    return InputError(
        f"request body is nested too deeply: at most {MAX_DEPTH} levels of arrays and objects"
    )


def _check(value: Any) -> None:
    """Every string, key and number of the document, in document order, without recursion."""
    stack: list[Iterator[tuple[str, Any]]] = [iter([("", value)])]
    while stack:
        try:
            path, item = next(stack[-1])
        except StopIteration:
            stack.pop()
            continue
        name = path or "request body"
        if isinstance(item, _Refused):
            raise InputError(f"{name}: {item.rule}")
        if isinstance(item, str):
            problem = text_problem(item)
            if problem is not None:
                raise InputError(f"{name}: {problem}")
        elif isinstance(item, dict | list):
            if len(stack) > MAX_DEPTH:
                raise _too_deep()
            stack.append(_children(item, path))


def decode_json(raw: bytes) -> Any:
    """The JSON document of a request body (UTF-8), or InputError saying what is wrong.

    The messages of malformed JSON are those the gateway has always given;
    a refused value is named by its field (``task.taskId``, ``sourceFiles[2]``).
    """
    try:
        # Decode explicitly: json.loads(bytes) would also guess UTF-16/32.
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"request body is not UTF-8 JSON: {exc.reason}") from exc
    try:
        value = json.loads(
            text,
            parse_int=_parse_int,
            parse_float=_parse_float,
            parse_constant=_parse_constant,
        )
    except json.JSONDecodeError as exc:
        raise InputError(
            f"request body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
    except RecursionError as exc:
        # The decoder guards its own recursion; far beyond MAX_DEPTH in any case.
        raise _too_deep() from exc
    _check(value)
    return value
