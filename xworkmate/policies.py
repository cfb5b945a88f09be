"""Pure rules of the project package: scopes, periodic-job health, gateway state.

No database, no clock: callers pass `now`. Tested directly in tests/xworkmate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from xworkmate.config import PeriodicJob
from xworkmate.lib.beat_cron import beat_crontab

# How long a key's last_used_at may lag: we write it at most this often, so a
# busy bridge does not turn every request into an UPDATE.
LAST_USED_RESOLUTION = timedelta(seconds=60)


def scope_allows(granted: list[str] | tuple[str, ...], required: str) -> bool:
    """Write implies read within one area; areas never imply each other."""
    if required in granted:
        return True
    area, _, level = required.partition(":")
    return level == "read" and f"{area}:write" in granted


def last_used_is_stale(last_used_at: datetime | None, now: datetime) -> bool:
    return last_used_at is None or now - last_used_at >= LAST_USED_RESOLUTION


JobStatus = Literal["ok", "pending", "stale", "failing", "unscheduled", "disabled"]


@dataclass(frozen=True)
class JobHealth:
    status: JobStatus
    due_by: datetime | None  # the tick must have happened by then, or the job is stale

    @property
    def is_down(self) -> bool:
        return self.status in ("stale", "unscheduled")


def next_fire_after(job: PeriodicJob, moment: datetime) -> datetime:
    """When beat fires `job` next after `moment` (aware datetimes)."""
    if job.every is not None:
        return moment + job.every
    if job.cron is None:  # the config guarantees exactly one of every/cron
        raise ValueError(f"periodic job {job.name!r} has neither every nor cron")
    # Celery measures "remaining" from its own clock; pin that clock to
    # `moment` so the answer depends on the arguments only.
    schedule = beat_crontab(job.cron, nowfun=lambda: moment)
    return moment + schedule.remaining_estimate(moment)


def job_health(
    job: PeriodicJob,
    *,
    beat_seen_at: datetime | None,
    last_tick_at: datetime | None,
    last_status: str,
    now: datetime,
) -> JobHealth:
    """Classify one periodic job.

    A job is stale when its last tick (or, before the first one, the start of
    the beat that scheduled it) is older than two of its intervals: one missed
    tick is tolerated, because beat and the worker each add some delay.
    """
    if not job.enabled:
        return JobHealth("disabled", None)
    anchor = last_tick_at or beat_seen_at
    if anchor is None:
        return JobHealth("unscheduled", None)
    due_by = next_fire_after(job, next_fire_after(job, anchor))
    if now > due_by:
        return JobHealth("stale", due_by)
    if last_tick_at is None:
        return JobHealth("pending", due_by)
    return JobHealth("failing" if last_status == "error" else "ok", due_by)


# ---------------------------------------------------------------------------
# Gateway rules (contract §13.2, §14): pure functions of their arguments.

MAX_RECORDED_TASK_RUNS = 32  # runs per session tasks.get can see (§2)
OUTPUT_CAP = 16 * 1024  # UTF-16 code units, as the original's String.slice
ERROR_CAP = 2048

_NIL = "<nil>"  # what the Go bridge sends for a nil string


def task_string(value: object) -> str:
    """taskState.ts `optionalString`: strings, numbers and booleans, trimmed.

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
        text = value.strip()
    else:
        return ""
    return "" if text == _NIL else text


def hook_string(value: object) -> str:
    """index.ts `stringParam`: strings only, trimmed."""
    return value.strip() if isinstance(value, str) else ""


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
            return float(value.strip() or "0") == 1
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


_SECRET_TOKEN = re.compile(r"\b(sk|nvapi)-[A-Za-z0-9._-]+\b", re.IGNORECASE | re.ASCII)
_API_KEY_VALUE = re.compile(r"(api[_ -]?key\s*[:=]\s*)[^\s,;]+", re.IGNORECASE)


def sanitize_error(raw: object) -> str:
    """§14.2 error: keys and tokens redacted first, then capped at 2048 units."""
    text = task_string(raw)
    text = _SECRET_TOKEN.sub(r"\1-<redacted>", text)
    text = _API_KEY_VALUE.sub(r"\1<redacted>", text)
    return utf16_prefix(text, ERROR_CAP)


def last_assistant_text(messages: object) -> str:
    """§14.3 `lastAssistantText`: the final assistant display text, or "" if none."""
    if not isinstance(messages, list):
        return ""
    for message in reversed(messages):
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if not isinstance(role, str) or role.strip().lower() != "assistant":
            continue
        content = message.get("content")
        if isinstance(content, str) and content.strip():
            return content.strip()
        if isinstance(content, list):
            texts = []
            for block in content:
                if not isinstance(block, dict):
                    continue
                kind = block.get("type")
                if not isinstance(kind, str) or kind.strip().lower() not in ("text", "output_text"):
                    continue
                text = block.get("text")
                if isinstance(text, str) and text.strip():
                    texts.append(text.strip())
            joined = "\n".join(texts).strip()
            if joined:
                return joined
    return ""


def wire_time(moment: datetime) -> str:
    """JavaScript's `Date.prototype.toISOString()`: UTC, milliseconds, `Z`."""
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def history_purge_before(now: datetime, retention: timedelta) -> datetime:
    """Runs moved to the history before this moment have outlived the retention."""
    return now - retention
