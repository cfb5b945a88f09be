"""The original's state file, `.task-state.json` (§4.2–§4.4), read for an import (D-B22).

The original kept every task in one JSON document: `tasks` keyed by name, the
per-session lock table `active_long_runs_by_session`, and in older files a
single `active_long_run` (or `active_long_run_task`) that its
`normalize_state` turned into a lock. Records were written by hand as often as
by `task_state.py set`, so fields may be missing, null, naive or odd. Reading
one here checks every record the way `set` would have checked it; a record
that could not have been stored is skipped with its reason, never guessed at,
and what is filled in for a missing field is reported (`repairs`).

The lock table is settled last, once the tasks that stay are known, with the
repair names of the original's cleanup_state: a lock on a task not imported
is an orphan, a lock on an old key moves to the task's key (D-B11), an active
task without its lock gets it back. A lock held by a finished task is
released, as `set` releases it when the task finishes.

Whatever the file holds, reading it never raises anything but
`state_file_error` (D-B27): a record that would overflow a date, nests too
deeply or names a field twice is one more skipped record, and a value is only
ever shown cut short (`_shown`), never rendered whole.
"""

from __future__ import annotations

import json
import reprlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import Any

from longrun.policies.answers import EXIT_ACTION, LongrunError
from longrun.policies.states import ACTIVE_STATES, DELIVERY_STATUSES, STATES
from longrun.policies.timing import TIME_RANGE_RULE, parse_progress_every, task_time
from xworkmate.lib.strict_json import MAX_DEPTH

__all__ = [
    "MISSING_PROGRESS_EVERY",
    "STATE_FILE_MAX_CHARS",
    "LockPlan",
    "StateRecords",
    "TaskRecord",
    "parse_state",
    "plan_locks",
    "read_state",
    "state_file_error",
]

# What the original's foreground check read for a record without progress_every (§6).
MISSING_PROGRESS_EVERY = "5m"
# The longest file an import reads (D-B27). The original's files hold a few
# tasks of at most a few thousand characters each; this bounds the memory an
# import takes whatever it is given.
STATE_FILE_MAX_CHARS = 50_000_000
# A reason is a sentence: a value in it is cut short, and so is the reason.
_REASON_MAX = 300
_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 3, 60, 60

_TOP_LEVEL = ("tasks", "active_long_runs_by_session", "active_long_run", "active_long_run_task")
_TEXTS = ("goal", "done_when", "blocked_when", "boundary", "next_check", "note")
_OPTIONAL_TEXTS = (
    "last_progress_delivery_id",
    "last_progress_message_hash",
    "last_progress_send_error",
    "last_resume_reason",
)
_TIMES = (
    "last_progress_at",
    "last_progress_attempt_at",
    "last_progress_sent_at",
    "last_progress_unknown_at",
    "last_visible_reply_at",
    "last_tool_result_at",
    "last_resume_at",
    "updated_at",
)
_KNOWN = frozenset(
    (
        "task",
        "session",
        "session_label",
        "origin_session_key",
        "state",
        "progress_every",
        "last_progress_delivery_status",
        "last_resume_count",
        *_TEXTS,
        *_OPTIONAL_TEXTS,
        *_TIMES,
    )
)


def state_file_error(reason: str) -> LongrunError:
    """The original's refusal of a file it could not read (its RuntimeError, exit 1)."""
    return LongrunError(
        exit_code=EXIT_ACTION,
        body=f"failed to read state file: {reason}",
        field="file",
        rule="must be a long-run-mode state file (.task-state.json)",
    )


@dataclass(frozen=True)
class TaskRecord:
    """One task of the file as the store keeps it: field name -> value.

    Texts are strings (empty for the original's null), times aware UTC.
    `created_at` is the record's earliest time: the file has none of its own.
    """

    name: str
    values: dict[str, Any]
    created_at: datetime


@dataclass(frozen=True)
class StateRecords:
    tasks: list[TaskRecord]
    locks: dict[str, Any]  # the file's lock table with the legacy lock merged in
    skipped: list[dict[str, str]]  # {"task", "reason"}
    repairs: list[dict[str, str]]  # {"task", "field", "action"}


class _Twice(dict[str, Any]):
    """A JSON object of the file that names keys more than once (`twice`).

    Python's json keeps the last value silently, as the original's json.load
    did; the reader here refuses to pick one (D-B27).
    """

    def __init__(self, pairs: list[tuple[str, Any]], twice: list[str]) -> None:
        super().__init__(pairs)
        self.twice = twice


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) == len(pairs):
        return value
    seen: set[str] = set()
    twice: dict[str, None] = {}  # in the file's order, each once
    for key, _ in pairs:
        if key in seen:
            twice[key] = None
        seen.add(key)
    return _Twice(pairs, list(twice))


def _whole_number(text: str) -> int | float:
    """A JSON integer; past int()'s 4300 digits, the float it rounds to (±inf).

    Such a number fits no column: its record is skipped for it (D-B27), where
    int()'s ValueError would have refused the whole file.
    """
    try:
        return int(text)
    except ValueError:
        return float(text)


def parse_state(text: str) -> object:
    """The JSON document of a state file's text, or `state_file_error` (D-B27).

    `text` is what the caller read: at most STATE_FILE_MAX_CHARS and one more,
    so a longer file is known to be one without reading it all.
    """
    if len(text) > STATE_FILE_MAX_CHARS:
        raise state_file_error(f"the file is longer than {STATE_FILE_MAX_CHARS:,} characters")
    try:
        return json.loads(text, object_pairs_hook=_object, parse_int=_whole_number)
    except RecursionError:
        # The decoder guards its own stack: nesting past the interpreter's
        # recursion limit (about a thousand levels) is refused as a whole.
        raise state_file_error("the file nests arrays and objects too deeply to read") from None
    except ValueError as exc:  # not JSON: the decoder's own words, as before
        raise state_file_error(str(exc)) from None


def read_state(document: object, *, zone: tzinfo, now: datetime) -> StateRecords:
    """The records of an original state document, each checked (see the module).

    Raises `state_file_error` when `document` is not such a file at all: not an
    object, no `tasks` object, a lock table that is not an object, keys the
    original never wrote, or a key of the document or the lock table named
    twice (a task named twice is skipped instead).
    """
    if not isinstance(document, dict):
        raise state_file_error("the document is not a JSON object")
    if isinstance(document, _Twice):
        raise state_file_error(f"top-level keys named more than once: {_keys(document.twice)}")
    unknown = sorted(set(document) - set(_TOP_LEVEL))
    if unknown:
        raise state_file_error(f"unknown top-level keys: {_clip(', '.join(unknown))}")
    tasks = document.get("tasks")
    if not isinstance(tasks, dict):
        raise state_file_error("'tasks' must be an object of task records keyed by name")
    locks = document.get("active_long_runs_by_session", {})
    if not isinstance(locks, dict):
        raise state_file_error("'active_long_runs_by_session' must be an object")
    if isinstance(locks, _Twice):
        raise state_file_error(
            f"'active_long_runs_by_session' names session keys more than once: {_keys(locks.twice)}"
        )
    twice = set(tasks.twice) if isinstance(tasks, _Twice) else set()
    records: list[TaskRecord] = []
    skipped: list[dict[str, str]] = []
    repairs: list[dict[str, str]] = []
    for name, item in tasks.items():
        try:
            if name in twice:
                raise _Invalid("the file holds more than one record under this name")
            records.append(_record(name, item, zone=zone, now=now, repairs=repairs))
        except _Invalid as exc:
            skipped.append({"task": name, "reason": _clip(str(exc))})
    merged = dict(locks)
    # normalize_state's migration: the legacy single lock joins the table
    # unless its key is taken. A key comes only from origin_session_key here:
    # the original's fallback to the human-readable `session` was never a key.
    for legacy in ("active_long_run", "active_long_run_task"):
        holder = document.get(legacy)
        item = tasks.get(holder) if isinstance(holder, str) else None
        key = item.get("origin_session_key") if isinstance(item, dict) else None
        if isinstance(key, str) and key and key not in merged:
            merged[key] = holder
            repairs.append({"task": str(holder), "field": legacy, "action": "migrated_to_lock"})
    return StateRecords(records, merged, skipped, repairs)


class _Invalid(ValueError):
    """A record `set` could not have stored; its message is the skip reason."""


def _shown(value: object) -> str:
    """`repr(value)` cut short: the file's values may be huge or nest a thousand levels."""
    return _REPR.repr(value)


def _plain(value: object) -> str:
    """A string as it is (the original's `invalid state: running`), anything else `_shown`."""
    return value if isinstance(value, str) else _shown(value)


def _keys(keys: list[str]) -> str:
    return _clip(", ".join(_shown(key) for key in keys))


def _clip(reason: str) -> str:
    """The head (the field) and the tail (the rule) of a long reason."""
    if len(reason) <= _REASON_MAX:
        return reason
    half = _REASON_MAX // 2
    return f"{reason[:half]}…{reason[-half:]}"


def _depth_over(value: object, limit: int) -> bool:
    """Whether `value` nests arrays and objects more than `limit` levels, without recursion."""
    level = [value]
    for _ in range(limit + 1):
        containers = [item for item in level if isinstance(item, dict | list)]
        if not containers:
            return False
        level = [
            child
            for item in containers
            for child in (item.values() if isinstance(item, dict) else item)
        ]
    return True


def _record(
    name: str, item: object, *, zone: tzinfo, now: datetime, repairs: list[dict[str, str]]
) -> TaskRecord:
    if not isinstance(item, dict):
        raise _Invalid("the record is not an object")
    if isinstance(item, _Twice):
        raise _Invalid(f"invalid {item.twice[0]}: the record names it more than once")
    for key, value in item.items():
        # The same bound as a request body's (xworkmate.lib.strict_json); the
        # original wrote no arrays or objects inside a record at all.
        if _depth_over(value, MAX_DEPTH):
            raise _Invalid(f"invalid {key}: nested deeper than {MAX_DEPTH} levels")
    inner = item.get("task", name)
    if inner != name:
        raise _Invalid(f"its task field {_shown(inner)} differs from its key")
    state = item.get("state")
    if state not in STATES:
        raise _Invalid(f"invalid state: {_plain(state)}")
    key = _optional_text(item, "origin_session_key")
    if state in ACTIVE_STATES and not key:
        # cleanup_state's reason: `set` refuses such a record (exit 4).
        raise _Invalid("active_state_missing_origin_session_key")
    values: dict[str, Any] = {
        "name": name,
        "state": state,
        "origin_session_key": key,
        "session_label": _optional_text(item, "session_label") or _optional_text(item, "session"),
    }
    for text in (*_TEXTS, *_OPTIONAL_TEXTS):
        values[text] = _optional_text(item, text)
    values["next_check"] = values["next_check"].strip()
    status = item.get("last_progress_delivery_status")
    if status not in (None, "", *DELIVERY_STATUSES):
        raise _Invalid(f"invalid last_progress_delivery_status: {_plain(status)}")
    values["last_progress_delivery_status"] = status or ""
    count = item.get("last_resume_count")
    if count is None:
        count = 0
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise _Invalid(f"invalid last_resume_count: {_shown(count)} (a whole number, 0 or more)")
    values["last_resume_count"] = count
    every = item.get("progress_every")
    if every is None or every == "":
        # The original's foreground check read such a record as 5m (§6).
        every = MISSING_PROGRESS_EVERY
        repairs.append(
            {"task": name, "field": "progress_every", "action": f"set_to_{MISSING_PROGRESS_EVERY}"}
        )
    if not isinstance(every, str):
        raise _Invalid(f"invalid progress_every: {_shown(every)}")
    try:
        seconds = int(parse_progress_every(every).total_seconds())
    except LongrunError as exc:  # the interval `set` would refuse
        raise _Invalid(str(exc.body)) from exc
    values["progress_every"] = every.strip()
    values["progress_every_seconds"] = seconds
    for moment in _TIMES:
        values[moment] = _time(item, moment, zone)
    present = [values[moment] for moment in _TIMES if values[moment] is not None]
    if values["updated_at"] is None:
        # The original's watchdog called such a task due ("missing updated_at");
        # its newest time keeps that true once the stale window has passed.
        values["updated_at"] = max(present, default=now)
        action = "set_from_latest_time" if present else "set_to_import_time"
        repairs.append({"task": name, "field": "updated_at", "action": action})
        present.append(values["updated_at"])
    for extra in sorted(set(item) - _KNOWN):
        repairs.append({"task": name, "field": extra, "action": "ignored_unknown_field"})
    return TaskRecord(name, values, min(present))


def _optional_text(item: Mapping[str, Any], key: str) -> str:
    value = item.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _Invalid(f"invalid {key}: {_shown(value)} (a string or null)")
    return value


def _time(item: Mapping[str, Any], key: str, zone: tzinfo) -> datetime | None:
    """An ISO 8601 time of the record, in `zone` without an offset (as D-B4 reads next_check).

    Only a time a task may hold (D-B27): `0001-01-01T00:00:00+05:00` has no
    UTC time at all, and one near 9999 none a day or a deadline later.
    """
    value = item.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise _Invalid(f"invalid {key}: {_shown(value)} (an ISO 8601 time or null)")
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError as exc:
        raise _Invalid(f"invalid {key}: {_shown(value)} is not an ISO 8601 time") from exc
    utc = task_time(moment, zone)
    if utc is None:
        raise _Invalid(f"invalid {key}: {_shown(value)} {TIME_RANGE_RULE}")
    return utc


@dataclass(frozen=True)
class LockPlan:
    locks: dict[str, str]  # the locks to create: session key -> task name
    repairs: list[dict[str, str]] = field(default_factory=list)


def plan_locks(
    tasks: Mapping[str, tuple[str, str]],
    locks: Mapping[str, Any],
    *,
    held: Mapping[str, str],
    skipped: Collection[str],
) -> LockPlan:
    """The locks the imported tasks hold, and the repairs that led there.

    `tasks`: each imported task's (state, origin_session_key); `locks`: the
    file's table; `held`: the locks of the store that stay (they win);
    `skipped`: the tasks of the file not imported (their locks stay out too).
    A lock the file names first keeps its key over one only restored here.
    """
    taken = dict(held)
    plan = LockPlan({})

    def repair(key: str, task: object, action: str, **more: str) -> None:
        who = "old_task" if action == "drop_orphan_lock" else "task"
        plan.repairs.append({"session_key": key, who: _plain(task), "action": action, **more})

    moved: list[tuple[str, str]] = []
    for key, holder in locks.items():
        if isinstance(holder, str) and holder in skipped:
            repair(key, holder, "skipped_with_task")
            continue
        if not isinstance(holder, str) or holder not in tasks or not key:
            repair(key, holder, "drop_orphan_lock")
            continue
        state, task_key = tasks[holder]
        if state not in ACTIVE_STATES:
            repair(key, holder, "release_lock_of_finished_task")
        elif task_key != key:
            moved.append((key, holder))
        elif key not in taken:  # else the store's holder keeps it (reported below)
            taken[key] = plan.locks[key] = holder
    # A lock left on an old key moves with the task's key (D-B11).
    for key, holder in moved:
        new_key = tasks[holder][1]
        if new_key in taken:
            repair(key, holder, "drop_stale_lock", new_session_key=new_key)
        else:
            taken[new_key] = plan.locks[new_key] = holder
            repair(key, holder, "replace_with_task_origin_session_key", new_session_key=new_key)
    holding = set(plan.locks.values())
    for name, (state, key) in tasks.items():
        if state not in ACTIVE_STATES or name in holding:
            continue
        if key in taken:
            repair(key, name, "lock_held_by_other_task", holder=taken[key])
        else:
            taken[key] = plan.locks[key] = name
            repair(key, name, "restore_missing_lock")
    return plan
