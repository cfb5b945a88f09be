"""Strings as JavaScript reads them: one trim and one length rule for every request string.

The bridge and the agents are JavaScript programs, and the original plugin
trimmed every string with ``String.prototype.trim``. Python's ``str.strip``
removes a different set (it also drops ``\\x1c``-``\\x1f`` and ``\\x85`` but keeps
the byte-order mark ``\\ufeff``), so a key trimmed one way in one place and the
other way elsewhere would be stored as one string and scoped as another. Every
string of a request therefore goes through :func:`js_trim` (D-K7).

Beside xworkmate.lib.jstime (times as JavaScript computes them); the name
`wire` is kept for what the contracts fix on the wire (D-K18).
"""

from __future__ import annotations

from xworkmate.lib.errors import InputError

__all__ = [
    "JS_WHITESPACE",
    "KEY_MAX_LENGTH",
    "NOT_BLANK_PATTERN",
    "WHITESPACE_CLASS",
    "check_max_length",
    "js_trim",
]

# ECMAScript WhiteSpace + LineTerminator: exactly what String.prototype.trim removes.
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)

# JS_WHITESPACE as the body of an ECMAScript regex character class, and the
# pattern of a string that is not blank once trimmed and holds no NUL: how the
# API's JSON Schemas (OpenAPI) describe the strings the service trims.
WHITESPACE_CLASS = "".join(f"\\u{ord(char):04x}" for char in JS_WHITESPACE)
NOT_BLANK_PATTERN = f"^[^\\u0000]*[^\\u0000{WHITESPACE_CLASS}][^\\u0000]*$"

# Longest session key, app thread key, run id or task id the service accepts.
# Callers refuse longer ones with a message naming the field, so no database
# column ever sees them.
KEY_MAX_LENGTH = 512


def js_trim(value: str) -> str:
    """``value.trim()`` as JavaScript computes it."""
    return value.strip(JS_WHITESPACE)


def check_max_length(
    field: str,
    value: str,
    limit: int = KEY_MAX_LENGTH,
    *,
    error: type[Exception] = InputError,
) -> str:
    """Return ``value`` or raise ``error("<field> must be at most <limit> characters")``."""
    if len(value) > limit:
        raise error(f"{field} must be at most {limit} characters")
    return value
