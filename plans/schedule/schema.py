"""A schedule's JSON Schema (OpenAPI 3.0): one shape per kind, as validate_schedule reads it.

The API documents a schedule with this schema (D-K15), so a client or a fuzzer
that follows it sends what the engine takes, and what the schema refuses the
engine refuses too: the kind (trimmed and lower-cased, as OpenClaw's
normaliser reads it), each kind's own properties and no other, their types and
bounds. What only the engine can judge stays in words: whether a cron
expression parses, a zone exists, an `at` lies within the next ten years.
"""

from __future__ import annotations

from typing import Any

from ._time import MAX_MS

__all__ = ["STRIPPED_CLASS", "schedule_schema"]

# What Python's str.strip() removes (the engine trims the kind, expr, tz and at with
# it, DRF every CharField), as the body of an ECMAScript character class: not the
# whitespace of `\s` there. No character above U+3000 is whitespace.
STRIPPED_CLASS = "".join(f"\\u{code:04x}" for code in range(0x3001) if chr(code).isspace())
_AT = (
    "[0-9]+|[0-9]{4}-[0-9]{2}-[0-9]{2}"
    "(?:T[0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\\.[0-9]{1,9})?)?(?:[Zz]|[+-][0-9]{2}:?[0-9]{2})?)?"
)


def _trimmed(body: str) -> str:
    return f"^[{STRIPPED_CLASS}]*(?:{body})[{STRIPPED_CLASS}]*$"


def _kind(name: str) -> dict[str, Any]:
    letters = "".join(f"[{letter.upper()}{letter}]" for letter in name)
    return {"type": "string", "pattern": _trimmed(letters), "description": name}


def _number(description: str, *, integer: bool, low: int, high: int) -> dict[str, Any]:
    kind = "integer" if integer else "number"
    return {"type": kind, "minimum": low, "maximum": high, "description": description}


def _shape(kind: str, properties: dict[str, Any], *required: str) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["kind", *required],
        "properties": {"kind": _kind(kind), **properties},
        "additionalProperties": False,
    }


def schedule_schema(*, min_every_ms: int, preview: bool) -> dict[str, Any]:
    """The schema of a schedule a job may run on (``preview``: one the preview takes,
    where a fractional ``everyMs`` is floored, D-C10)."""
    not_blank = f"[^\\u0000{STRIPPED_CLASS}]"
    at = _shape(
        "at",
        {
            "at": {
                "type": "string",
                "pattern": _trimmed(_AT),
                "description": "an ISO-8601 date or date-time (UTC without an offset), or "
                "epoch ms; a job's within a minute ago and ten years ahead",
            }
        },
        "at",
    )
    every = _shape(
        "every",
        {
            "everyMs": _number(
                "the interval (plans.min_every at least)",
                integer=not preview,
                low=max(1, min_every_ms),
                high=MAX_MS,
            ),
            "anchorMs": {
                **_number("epoch ms of a run; default now", integer=True, low=0, high=MAX_MS),
                "nullable": True,
            },
        },
        "everyMs",
    )
    cron = _shape(
        "cron",
        {
            "expr": {
                "type": "string",
                "pattern": f"^[^\\u0000]*{not_blank}[^\\u0000]*$",
                "description": "5, 6 or 7 fields, or a nickname (@daily...), as croner 10 reads it",
            },
            "tz": {
                "type": "string",
                "nullable": True,
                "description": "an IANA zone; missing, null or blank: the host's",
            },
            "staggerMs": {
                **_number("top-of-hour stagger; 0 = exact", integer=False, low=0, high=MAX_MS),
                "nullable": True,
            },
        },
        "expr",
    )
    return {"oneOf": [cron, every, at]}
