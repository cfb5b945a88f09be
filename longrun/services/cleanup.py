"""cleanup_state (§7.11, D-B16): the store's housekeeping.

Drop test and broken tasks, archive old finished ones, repair locks.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db import transaction

from longrun.models import LongTask, SessionLock
from longrun.policies.answers import EXIT_OK, Answer
from longrun.policies.cleanup import CleanupTask, cleanup_plan
from longrun.policies.timing import whole_second
from longrun.selectors import live_tasks, lock_table, longrun_rules
from longrun.services._common import _key, _name, logger


def tasks_cleanup(
    *,
    now: datetime,
    apply: bool = False,
    drop_tasks: Iterable[str] = (),
    drop_test_prefixes: Iterable[str] = (),
) -> Answer:
    """cleanup_state: drop test and broken tasks, archive old finished ones, repair locks.

    Without `apply` it only reports (the original's dry run); with it, the
    report is what was done. Always exit 0.
    """
    now = whole_second(now)
    rules = longrun_rules()
    names = [_name(name) for name in drop_tasks]
    prefixes = [_key("drop_test_prefix", prefix, required=True) for prefix in drop_test_prefixes]
    with transaction.atomic():
        rows = live_tasks()
        tasks = list(rows.select_for_update() if apply else rows)
        locks = lock_table()
        plan = cleanup_plan(
            [CleanupTask(t.name, t.state, t.origin_session_key, t.updated_at) for t in tasks],
            locks,
            drop_tasks=names,
            drop_prefixes=prefixes,
            now=now,
            archive_after=rules.archive_after,
        )
        if apply:
            _apply_cleanup(tasks, locks, plan.dropped, plan.archived, plan.locks, now)
    body = {
        # One column holds both session and session_label: nothing to normalise.
        "normalized": [],
        "dropped": plan.dropped,
        "archived": plan.archived,
        "lock_repairs": plan.lock_repairs,
        "task_count_before": len(tasks),
        "task_count_after": len(plan.remaining),
        "lock_count_before": len(locks),
        "lock_count_after": len(plan.locks),
        "apply": apply,
    }
    return Answer(EXIT_OK, body)


def _apply_cleanup(
    tasks: list[LongTask],
    locks: dict[str, str],
    dropped: list[dict[str, Any]],
    archived: list[dict[str, Any]],
    wanted: dict[str, str],
    now: datetime,
) -> None:
    by_name = {task.name: task for task in tasks}
    stale_keys = [key for key, holder in locks.items() if wanted.get(key) != holder]
    SessionLock.objects.filter(origin_session_key__in=stale_keys).delete()
    LongTask.objects.filter(pk__in=[by_name[item["task"]].pk for item in dropped]).delete()
    LongTask.objects.filter(pk__in=[by_name[item["task"]].pk for item in archived]).update(
        archived_at=now
    )
    SessionLock.objects.bulk_create(
        SessionLock(origin_session_key=key, task=by_name[holder], acquired_at=now)
        for key, holder in wanted.items()
        if locks.get(key) != holder
    )
    logger.info(
        "long-run cleanup: %d dropped, %d archived, %d locks rewritten",
        len(dropped),
        len(archived),
        len(stale_keys),
    )
