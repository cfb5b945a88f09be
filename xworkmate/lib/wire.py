"""Strings as the bridge sends them: one trim and one length rule for the whole wire.

The bridge and the agents are JavaScript programs, and the original plugin
trimmed every string with ``String.prototype.trim``. Python's ``str.strip``
removes a different set (it also drops ``\\x1c``-``\\x1f`` and ``\\x85`` but keeps
the byte-order mark ``\\ufeff``), so a key trimmed one way in one place and the
other way elsewhere would be stored as one string and scoped as another. Every
wire string therefore goes through :func:`js_trim` (D-K7).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from xworkmate.lib.errors import InputError

__all__ = [
    "JS_WHITESPACE",
    "KEY_MAX_LENGTH",
    "NOT_BLANK_PATTERN",
    "WHITESPACE_CLASS",
    "check_max_length",
    "js_trim",
    "with_run_identity",
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


def with_run_identity(
    params: Mapping[str, Any],
    *,
    drop: Collection[str],
    session_key: str,
    run_id: str,
    workspace_dir: str = "",
    artifact_scope: str = "",
) -> dict[str, Any]:
    """`params` acting on one run whatever they said: the keys in `drop` removed,
    the run's session and id set, and its workspace and scope where it has them.

    Used where the identity comes from a trusted source, not the body: a key
    bound to a run (xworkmate.methods.scoped_params) and the artifacts tool's
    context (artifacts.engine.tool).
    """
    scoped = {key: value for key, value in params.items() if key not in drop}
    scoped["openclawSessionKey"] = session_key
    scoped["runId"] = run_id
    if workspace_dir:
        scoped["workspaceDir"] = workspace_dir
    if artifact_scope:
        scoped["artifactScope"] = artifact_scope
    return scoped
