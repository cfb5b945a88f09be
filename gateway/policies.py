"""Pure rules of the gateway (contract §13.2, §14): functions of their arguments only.

No database, no clock: callers pass what they read and `now`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta

from xworkmate.lib.errors import InputError
from xworkmate.lib.jstext import js_trim

MAX_RECORDED_TASK_RUNS = 32  # runs per session tasks.get can see (§2)
OUTPUT_CAP = 16 * 1024  # UTF-16 code units, as the original's String.slice
ERROR_CAP = 2048
MODE = "gateway-chat"  # the `mode` of every tasks.get payload (§13.2)
CREATED_AT_MAX_LENGTH = 64  # a mapping's `createdAt`, kept verbatim (§13.1)

_NIL = "<nil>"  # what the Go bridge sends for a nil string


def task_string(value: object) -> str:
    """taskState.ts `optionalString`: strings, numbers and booleans, trimmed as JS trims.

    JSON numbers print the way JavaScript's String() prints them (1.0 → "1"),
    and the Go bridge's "<nil>" means empty.
    """
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, int):
        text = str(value)
    elif isinstance(value, float):
        text = str(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)
    elif isinstance(value, str):
        text = js_trim(value)
    else:
        return ""
    return "" if text == _NIL else text


SESSION_KEY_NOT_A_STRING = "openclawSessionKey must be a string"


def lookup_session_key(params: Mapping[str, object]) -> str:
    """tasks.get's `openclawSessionKey`: absent, or a string (D-A18).

    The original read a number or a boolean as its text, so `7` looked up the
    session "7"; a session key is a name, and only the numeric options keep
    the original's coercion (D-A8). Anything else, null included, is refused.
    """
    if "openclawSessionKey" not in params:
        return ""
    value = params["openclawSessionKey"]
    if not isinstance(value, str):
        raise InputError(SESSION_KEY_NOT_A_STRING)
    return task_string(value)


def hook_string(value: object) -> str:
    """index.ts `stringParam`: strings only, trimmed."""
    return js_trim(value) if isinstance(value, str) else ""


def schema_version_is_one(value: object) -> bool:
    """`Number(env.schemaVersion ?? 1) === 1`, for JSON values."""
    if value is None:
        return True
    if isinstance(value, bool):
        return value is True  # Number(true) is 1
    if isinstance(value, int | float):
        return value == 1
    if isinstance(value, str):
        try:
            return float(js_trim(value) or "0") == 1
        except ValueError:
            return False
    if isinstance(value, list) and len(value) == 1:
        return schema_version_is_one(value[0] if isinstance(value[0], str) else str(value[0]))
    return False


def app_status_from_task_status(task_status: str) -> str:
    """`appStatusFromTaskStatus` at HEAD (D-A1: `completed` counts as completed)."""
    if task_status in ("succeeded", "completed"):
        return "completed"
    if task_status in ("failed", "timed_out", "cancelled", "lost"):
        return "failed"
    return "running"


def native_status_may_change(current: str, new: str) -> bool:
    """Terminal native statuses are sticky: only an active record changes status.

    A re-sent identical status is allowed (it may carry a fuller record).
    """
    return current == new or current in ("queued", "running")


def utf16_prefix(text: str, units: int) -> str:
    """`text.slice(0, units)` in UTF-16 code units, never splitting a character."""
    encoded = text.encode("utf-16-le", "surrogatepass")
    if len(encoded) <= units * 2:
        return text
    return encoded[: units * 2].decode("utf-16-le", "ignore")


def sanitize_output(raw: object) -> str:
    """§14.2 output: trimmed, capped at 16 KiB (UTF-16 units); "" means absent."""
    return utf16_prefix(task_string(raw), OUTPUT_CAP)


_REDACTED = "<redacted>"
# Each rule keeps what names the secret (a key's vendor prefix, the field name)
# and replaces only the secret itself, so a stored error still says what failed.
# The rules run in this order: the prefix rules first, so a key after "Bearer"
# keeps its vendor prefix; the Bearer rule then catches any other token.
_REDACTIONS: tuple[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]], ...] = (
    # The contract's rules (§14.2): OpenAI-style and NVIDIA keys, `api_key=`.
    (re.compile(r"\b(sk|nvapi)-[A-Za-z0-9._-]+\b", re.IGNORECASE | re.ASCII), r"\1-" + _REDACTED),
    # This service's own API keys (xworkmate.services.KEY_PREFIX; this module
    # stays free of Django, so the prefix is spelled here).
    (re.compile(r"\bxwm_[A-Za-z0-9_-]+", re.ASCII), "xwm_" + _REDACTED),
    # GitHub tokens: classic (ghp_, and gho_/ghu_/ghs_/ghr_) and fine-grained.
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]+", re.ASCII), "github_pat_" + _REDACTED),
    (re.compile(r"\b(gh[pousr])_[A-Za-z0-9]+", re.ASCII), r"\1_" + _REDACTED),
    # AWS access key ids (long-term AKIA, temporary ASIA).
    (re.compile(r"\b(AKIA|ASIA)[A-Z0-9]{16}\b", re.ASCII), r"\1" + _REDACTED),
    # Credentials in a URL: scheme://user:password@host.
    (re.compile(r"(://[^/\s:@]+:)[^/\s@]+@"), r"\1" + _REDACTED + "@"),
    # JSON (or a Python repr) fields named like a secret: "apiKey": "…", 'token': '…'.
    (
        re.compile(
            r"""(?P<head>(?P<q>["'])[A-Za-z0-9_-]*(?:api[_-]?key|token|password|passwd|secret)"""
            r"""(?P=q)\s*:\s*)(?:(?P<vq>["'])(?:\\.|(?!(?P=vq)).)*(?P=vq)|[^\s,}\]]+)""",
            re.IGNORECASE,
        ),
        lambda m: f"{m['head']}{m['vq'] or ''}{_REDACTED}{m['vq'] or ''}",
    ),
    # key=value and key: value forms (a query string, a log line, a config dump).
    (re.compile(r"(api[_ -]?key\s*[:=]\s*)[^\s,;]+", re.IGNORECASE), r"\1" + _REDACTED),
    (
        # The look-behind starts a name only at its first character, which keeps
        # the scan linear on long runs of letters.
        re.compile(
            r"(?<![A-Za-z0-9_-])([A-Za-z0-9_-]*(?:token|password|passwd|secret)\s*[:=]\s*)"
            r"""(?:"[^"]*"|'[^']*'|[^\s,;&"']+)""",
            re.IGNORECASE,
        ),
        r"\1" + _REDACTED,
    ),
    # An HTTP bearer credential (RFC 6750 b64token) not already redacted above.
    (
        re.compile(r"\b(Bearer\s+)[A-Za-z0-9._~+/-]+=*(?![A-Za-z0-9._~+/=<-])", re.IGNORECASE),
        r"\1" + _REDACTED,
    ),
)


def sanitize_error(raw: object) -> str:
    """§14.2 error: keys and tokens redacted first, then capped at 2048 units."""
    text = task_string(raw)
    for pattern, replacement in _REDACTIONS:
        text = pattern.sub(replacement, text)
    return utf16_prefix(text, ERROR_CAP)


_TEXT_BLOCKS = ("text", "output_text")


def last_assistant_text(messages: object) -> str:
    """§14.3 `lastAssistantText`: the final assistant display text, or "" if none."""
    if not isinstance(messages, list):
        return ""
    for message in reversed(messages):
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if not isinstance(role, str) or js_trim(role).lower() != "assistant":
            continue
        content = message.get("content")
        if isinstance(content, str) and js_trim(content):
            return js_trim(content)
        if isinstance(content, list):
            texts = []
            for block in content:
                if not isinstance(block, dict):
                    continue
                kind = block.get("type")
                if not isinstance(kind, str) or js_trim(kind).lower() not in _TEXT_BLOCKS:
                    continue
                text = block.get("text")
                if isinstance(text, str) and js_trim(text):
                    texts.append(js_trim(text))
            joined = js_trim("\n".join(texts))
            if joined:
                return joined
    return ""


def history_purge_before(now: datetime, retention: timedelta) -> datetime:
    """Runs moved to the history before this moment have outlived the retention."""
    return now - retention
