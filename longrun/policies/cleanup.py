"""What cleanup_state does to the store, computed without touching it (§7.11, D-B16).

The plan lists the tasks to drop (the original's rules: a name or test prefix
asked for, an active task without `origin_session_key`), the finished tasks
old enough to archive (D-B16), and the lock table that should remain, with
each repair named as the original named it and listed in the original's
order: the lock table's (the order the locks were taken), then the tasks'.
The caller applies it only when asked (`--apply`); a dry run reports it and
changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from longrun.policies.states import ACTIVE_STATES
from longrun.policies.timing import is_old_enough_to_archive
from xworkmate.lib.durations import format_duration

__all__ = ["DEFAULT_TEST_PREFIXES", "CleanupPlan", "CleanupTask", "cleanup_plan"]

# The original's default --drop-test-prefix: manual regression tasks were named 回归-….
# Prefixes given by the caller are added to it, as argparse's append did.
DEFAULT_TEST_PREFIXES = ("回归-",)


@dataclass(frozen=True)
class CleanupTask:
    name: str
    state: str
    origin_session_key: str
    updated_at: datetime


@dataclass(frozen=True)
class CleanupPlan:
    dropped: list[dict[str, Any]]  # {"task", "reason"}
    archived: list[dict[str, Any]]  # {"task", "state", "reason"}
    lock_repairs: list[dict[str, Any]]
    locks: dict[str, str]  # the lock table afterwards: session key -> task name
    remaining: list[str]  # the tasks left in the store afterwards


def cleanup_plan(
    tasks: Iterable[CleanupTask],
    locks: Mapping[str, str],
    *,
    drop_tasks: Iterable[str],
    drop_prefixes: Iterable[str],
    now: datetime,
    archive_after: timedelta,
) -> CleanupPlan:
    names = set(drop_tasks)
    prefixes = tuple(dict.fromkeys((*DEFAULT_TEST_PREFIXES, *(p for p in drop_prefixes if p))))
    dropped: list[dict[str, Any]] = []
    archived: list[dict[str, Any]] = []
    kept: dict[str, CleanupTask] = {}
    for task in tasks:
        if task.name in names or task.name.startswith(prefixes):
            dropped.append({"task": task.name, "reason": "matched_drop_rule"})
        elif task.state in ACTIVE_STATES and not task.origin_session_key:
            dropped.append({"task": task.name, "reason": "active_state_missing_origin_session_key"})
        elif is_old_enough_to_archive(task.state, task.updated_at, now, archive_after):
            archived.append(
                {
                    "task": task.name,
                    "state": task.state,
                    "reason": f"finished_older_than ({format_duration(archive_after)})",
                }
            )
        else:
            kept[task.name] = task
    repairs: list[dict[str, Any]] = []
    after: dict[str, str] = {}
    for key, holder in locks.items():
        owner = kept.get(holder)
        if owner is None:
            repairs.append({"session_key": key, "old_task": holder, "action": "drop_orphan_lock"})
        elif owner.origin_session_key != key:
            # A holder without a key (a finished task given the lock by acquire-lock) loses
            # the lock: the original reported it as this repair with a null new key.
            repairs.append(
                {
                    "session_key": key,
                    "task": holder,
                    "action": "replace_with_task_origin_session_key",
                    "new_session_key": owner.origin_session_key or None,
                }
            )
            if owner.origin_session_key:
                after[owner.origin_session_key] = holder
        else:
            after[key] = holder
    # As in the original, of two active tasks that share a key without a lock, the last wins.
    restored: set[str] = set()
    for task in kept.values():
        key = task.origin_session_key
        if task.state in ACTIVE_STATES and key and (key not in after or key in restored):
            repairs.append(
                {"session_key": key, "task": task.name, "action": "restore_missing_lock"}
            )
            after[key] = task.name
            restored.add(key)
    return CleanupPlan(dropped, archived, repairs, after, list(kept))
