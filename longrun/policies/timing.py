"""The time rules of §5–§7 as pure functions of (task, now, thresholds).

Every boundary is the original's: progress is due at exactly `progress_every`
(`>=`), a checkpoint is due at exactly `next_check` (`>=`), a task is stale at
exactly the stale window (`>=`), idle only past the idle threshold (strict
`>`, on whole seconds), and a heartbeat with an unknown outcome is not sent
again while younger than the cooldown (strict `<`). Times are whole seconds,
as the original wrote them, so "61 seconds idle" means the same here.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo

from longrun.policies.answers import EXIT_INVALID, LongrunError
from longrun.policies.facts import TaskFacts
from longrun.policies.states import (
    ACTIVE_STATES,
    FINISHED_STATES,
    PROGRESS_STATES,
    UNKNOWN,
    WAITING,
)
from xworkmate.lib.durations import DurationError, format_duration, parse_duration

__all__ = [
    "OK",
    "PROGRESS",
    "RECOVERY",
    "TIME_RANGE_RULE",
    "Verdict",
    "delivery_id",
    "foreground_hash",
    "idle_for_seconds",
    "idle_limit",
    "idle_timed_out",
    "is_old_enough_to_archive",
    "is_progress_due",
    "latest_activity",
    "parse_next_check",
    "parse_progress_every",
    "progress_deadline",
    "progress_slot",
    "recently_unknown",
    "stale_limit",
    "task_time",
    "watchdog_verdict",
    "whole_second",
    "window_text",
]

RECOVERY = "recovery"
PROGRESS = "progress"
OK = "ok"


# The longest threshold a run may be given (--stale-minutes, --idle-seconds,
# --unknown-cooldown-minutes): a year, so no run's window reaches past the
# dates a datetime holds.
MAX_THRESHOLD_MINUTES = 525_600
MAX_THRESHOLD_SECONDS = MAX_THRESHOLD_MINUTES * 60
# The longest progress interval: 9999 hours, well inside the stored seconds column.
MAX_PROGRESS_EVERY = timedelta(hours=9999)
# The times a task may hold (D-B27). Everything the service derives from one
# stays inside the years a datetime holds: a deadline up to MAX_PROGRESS_EVERY
# or a threshold later, and its display in any zone (an offset under a day).
_EARLIEST_TIME = datetime(1970, 1, 1, tzinfo=UTC)
_LATEST_TIME = datetime(8999, 12, 31, 23, 59, 59, tzinfo=UTC)
TIME_RANGE_RULE = "must be a time from 1970-01-01 to 8999-12-31 (UTC)"


def whole_second(moment: datetime) -> datetime:
    """`moment` without its microseconds; it must be aware (the database keeps UTC)."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError("a long-run time must be timezone-aware")
    return moment.replace(microsecond=0)


# --- durations and checkpoints (D-B3, D-B4) ---------------------------------------------


def parse_progress_every(text: str) -> timedelta:
    """A task's progress interval; anything but `90s`, `3m`, `2h`, `1h30m` is refused (D-B3)."""
    try:
        every = parse_duration(text)
    except DurationError as exc:
        raise LongrunError(
            exit_code=EXIT_INVALID,
            body=f"invalid progress_every: {exc}",
            field="progress_every",
            rule=str(exc),
        ) from exc
    if every > MAX_PROGRESS_EVERY:
        rule = f"must be at most {format_duration(MAX_PROGRESS_EVERY)}"
        raise LongrunError(
            exit_code=EXIT_INVALID,
            body=f"invalid progress_every: {rule}",
            field="progress_every",
            rule=rule,
        )
    return every


def parse_next_check(text: str, *, anchor: datetime, zone: tzinfo) -> datetime | None:
    """The checkpoint `next_check` names, or None when it names none.

    An ISO date-time is taken as it is, in `zone` when it has no offset (D-B4);
    a duration counts from `anchor` (the task's `updated_at`, as the original
    did); free text such as `等CI` sets no checkpoint and leaves the task to
    the stale rule (D-B3), and so does a time outside the times a task may
    hold (_EARLIEST_TIME to _LATEST_TIME, D-B27), such as `0001-01-01` east of
    UTC, which falls before the calendar's first day.
    """
    value = text.strip()
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        try:
            checkpoint = anchor + parse_duration(value)
        except DurationError:
            return None
        except OverflowError:
            return None
    else:
        return task_time(moment, zone)
    return checkpoint if _EARLIEST_TIME <= checkpoint <= _LATEST_TIME else None


def task_time(moment: datetime, zone: tzinfo) -> datetime | None:
    """`moment` as a task holds a time: in UTC, whole seconds, read in `zone` when it
    has no offset; None when it is not one a task may hold (_EARLIEST_TIME to
    _LATEST_TIME, D-B27), or has no UTC time at all (before the year 1 or after 9999
    once its offset is applied)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=zone)
    # In UTC: a wall time inside a DST gap or overlap compares unequal to every
    # other aware time until it is converted (Python's fold rule).
    try:
        utc = whole_second(moment.astimezone(UTC))
    except OverflowError:
        return None
    return utc if _EARLIEST_TIME <= utc <= _LATEST_TIME else None


def window_text(window: timedelta) -> str:
    """A threshold as the original named it in reasons: minutes (`10m`) when whole."""
    seconds = int(window.total_seconds())
    return f"{seconds // 60}m" if seconds % 60 == 0 else format_duration(window)


# --- the foreground heartbeat (§7.3, §7.7) ------------------------------------------------


def _progress_anchor(task: TaskFacts) -> datetime:
    return task.last_progress_sent_at or task.last_progress_at or task.updated_at


def progress_deadline(task: TaskFacts) -> datetime | None:
    """When the task owes its next visible progress; None in a state that owes none."""
    if task.state not in PROGRESS_STATES:
        return None
    return _progress_anchor(task) + timedelta(seconds=task.progress_every_seconds)


def is_progress_due(task: TaskFacts, now: datetime) -> bool:
    deadline = progress_deadline(task)
    return deadline is not None and now >= deadline


def progress_slot(now: datetime, every_seconds: int) -> int:
    """The heartbeat's de-duplication slot: wall-clock periods of `progress_every`.

    The original counted whole minutes of `Nm` only (`2h` fell back to 3); any
    duration is one here (D-B3), at least one minute.
    """
    minutes = max(1, every_seconds // 60)
    return int(now.timestamp()) // 60 // minutes


def foreground_hash(task: TaskFacts, slot: int) -> str:
    """The message hash of the task's heartbeat in `slot` (the original's recipe, verbatim)."""
    raw = json.dumps(
        {
            "task": task.name,
            "state": task.state,
            "sessionKey": task.origin_session_key,
            "progressEvery": task.progress_every,
            "progressSlot": slot,
        },
        ensure_ascii=False,
        sort_keys=True,
    )
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def delivery_id(message_hash: str) -> str:
    return "fg-" + message_hash[:16]


def recently_unknown(
    task: TaskFacts, message_hash: str, now: datetime, cooldown: timedelta
) -> bool:
    """Whether this very heartbeat went out with an unknown outcome less than `cooldown` ago.

    Sending it again could deliver it twice ("timeout 应记为 unknown，不要直接当
    failed 重发").
    """
    unknown_at = task.last_progress_unknown_at
    return (
        task.last_progress_delivery_status == UNKNOWN
        and task.last_progress_message_hash == message_hash
        and unknown_at is not None
        and now - unknown_at < cooldown
    )


# --- keepalive (§7.9) ------------------------------------------------------------------


def latest_activity(task: TaskFacts) -> tuple[str, datetime]:
    """The newest activity signal and the field it comes from (the first one on a tie)."""
    candidates = (
        ("last_visible_reply_at", task.last_visible_reply_at),
        ("last_tool_result_at", task.last_tool_result_at),
        ("last_progress_at", task.last_progress_at),
        ("updated_at", task.updated_at),
    )
    present = [(name, moment) for name, moment in candidates if moment is not None]
    latest = max(moment for _, moment in present)
    return next(name for name, moment in present if moment == latest), latest


def idle_for_seconds(task: TaskFacts, now: datetime) -> int:
    return int((now - latest_activity(task)[1]).total_seconds())


def idle_timed_out(task: TaskFacts, now: datetime, idle: timedelta) -> bool:
    """Strictly more whole seconds idle than the threshold: 61 s resumes at 60, 60 s does not."""
    return task.state in PROGRESS_STATES and idle_for_seconds(task, now) > int(idle.total_seconds())


def idle_limit(now: datetime, idle: timedelta) -> datetime:
    """The newest activity time that is idle at `now`: what the keepalive's index query uses.

    With whole seconds, `int(now - t) > idle` holds exactly when `t <= now - idle - 1 s`.
    """
    return now - timedelta(seconds=int(idle.total_seconds()) + 1)


# --- watchdog (§7.10, §9) ----------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    kind: str  # RECOVERY, PROGRESS or OK
    reason: str  # the original's wording; "" when OK


def stale_limit(now: datetime, stale: timedelta) -> datetime:
    """The newest `updated_at` that is stale at `now` (the watchdog's index query)."""
    return now - stale


def watchdog_verdict(task: TaskFacts, now: datetime, stale: timedelta) -> Verdict:
    """Recovery, progress or ok, in the original's precedence: checkpoint, stale, progress.

    A waiting task is not stale before its future checkpoint (D-B7).
    """
    if task.state in ACTIVE_STATES:
        checkpoint = task.next_check_at
        if checkpoint is not None and now >= checkpoint:
            return Verdict(RECOVERY, f"next_check_due ({task.next_check})")
        waits_for_checkpoint = task.state == WAITING and checkpoint is not None
        if not waits_for_checkpoint and now - task.updated_at >= stale:
            return Verdict(RECOVERY, f"stale_update ({window_text(stale)})")
    if is_progress_due(task, now):
        return Verdict(PROGRESS, f"progress_due ({task.progress_every})")
    return Verdict(OK, "")


# --- cleanup (D-B16) ---------------------------------------------------------------------


def is_old_enough_to_archive(
    state: str, updated_at: datetime, now: datetime, archive_after: timedelta
) -> bool:
    """A finished task (done, blocked, handoff) not updated for longer than `archive_after`."""
    return state in FINISHED_STATES and now - updated_at > archive_after
