"""A run's execution timeout (§8.5, D-C22): pure rules, no framework."""

from __future__ import annotations

from collections.abc import Mapping

# An agentTurn run without timeoutSeconds ends as an error after this (§8.5).
DEFAULT_RUN_TIMEOUT_MS = 60 * 60_000
RUN_TIMED_OUT = "cron: job execution timed out"


def timeout_seconds(payload: Mapping[str, object]) -> int | None:
    """A payload's `timeoutSeconds` as OpenClaw stores it (floored, >= 0), None if it is
    not a number of seconds (a boolean is not)."""
    value = payload.get("timeoutSeconds")
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return None
    if value < 0 or value > 10**9:
        return None
    return int(value)


def run_timed_out(payload: Mapping[str, object], *, running_at_ms: int, now_ms: int) -> bool:
    """Whether a run started at `running_at_ms` is past its execution timeout (§8.5):
    `timeoutSeconds` when the payload has it (0: never), else 60 minutes."""
    seconds = timeout_seconds(payload) if "timeoutSeconds" in payload else None
    if seconds == 0:
        return False
    limit_ms = seconds * 1000 if seconds is not None else DEFAULT_RUN_TIMEOUT_MS
    return now_ms - running_at_ms >= limit_ms
