"""task_state.py's reads: show, list, locks, export-state (§7.1)."""

from __future__ import annotations

from longrun.policies import reports
from longrun.policies.answers import EXIT_OK, Answer
from longrun.selectors._common import (
    _locks,
    _paged,
    live_tasks,
    lock_table,
    longrun_rules,
    task_named,
)
from xworkmate.lib.paging import Page


def task_show(*, name: str, confined_to: str | None = None) -> Answer:
    return Answer(EXIT_OK, reports.task_record(task_named(name, confined_to), longrun_rules().zone))


def tasks_list(*, confined_to: str | None = None, page: Page | None = None) -> Answer:
    """task_state.py list: one line per live task; one page of them when `page` is given."""
    zone = longrun_rules().zone
    tasks, listed = _paged(live_tasks(confined_to), page)
    lines = [reports.list_line(task, zone) for task in tasks]
    return Answer(EXIT_OK, "\n".join(lines) if lines else "no tasks", listed)


def locks_show(*, confined_to: str | None = None, page: Page | None = None) -> Answer:
    """task_state.py locks; one page of the table (by session key) when `page` is given."""
    locks, listed = _paged(_locks(confined_to).select_related("task"), page)
    return Answer(EXIT_OK, {lock.origin_session_key: lock.task.name for lock in locks}, listed)


def state_export() -> Answer:
    """export-state: the store as the original's `.task-state.json` (§4.2), for import-state."""
    zone = longrun_rules().zone
    return Answer(
        EXIT_OK,
        {
            "tasks": {task.name: reports.task_record(task, zone) for task in live_tasks()},
            "active_long_runs_by_session": lock_table(),
        },
    )
