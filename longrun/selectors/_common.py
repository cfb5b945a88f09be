"""What the reads share: the rules, the live tasks, a task by name, the lock table.

And the watchdog's view of the live tasks, which its reports and the
foreground events both read.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.db.models import Model, QuerySet

from longrun.conf import longrun_conf
from longrun.models import LIVE, LongTask, SessionLock
from longrun.policies import reports
from longrun.policies.answers import EXIT_ACTION, EXIT_OK, Answer
from longrun.policies.facts import Rules
from longrun.policies.timing import OK, RECOVERY, Verdict, watchdog_verdict
from xworkmate.lib.jstext import js_trim
from xworkmate.lib.paging import Page
from xworkmate.lib.timezones import get_zone


def longrun_rules() -> Rules:
    """The `[longrun]` section of the running config."""
    section = longrun_conf()
    return Rules(
        progress_every=section.progress_every,
        idle=section.idle,
        stale=section.stale,
        unknown_cooldown=section.unknown_cooldown,
        blocked_after_failures=section.blocked_after_failures,
        zone=get_zone(section.time_zone),
        auto_resume=section.auto_resume,
        archive_after=section.archive_after,
        max_live_tasks=section.max_live_tasks_per_session,
        max_resumes_per_day=section.max_resumes_per_day,
        escalate_after_recoveries=section.escalate_after_recoveries,
    )


def live_tasks(confined_to: str | None = None) -> QuerySet[LongTask]:
    """The store: every task not archived (D-B16), in the order they were created.

    `confined_to` is an agent's session: it sees the tasks bound to that key only.
    """
    tasks = LongTask.objects.filter(LIVE).order_by("id")
    return tasks if confined_to is None else tasks.filter(origin_session_key=confined_to)


def task_named(name: str, confined_to: str | None = None) -> LongTask:
    """The live task called `name`, or the original's `task not found: <name>` (exit 1).

    Another session's task is not found for a caller `confined_to` a session.
    """
    task = (
        live_tasks(confined_to).filter(name=js_trim(name)).first()
        if isinstance(name, str)
        else None
    )
    if task is None:
        raise reports.task_not_found(name)
    return task


def _locks(confined_to: str | None) -> QuerySet[SessionLock]:
    """The locks in the order they were taken, as the original's dict kept them.

    A lock given to another task keeps its row, and its place, as a key
    assigned again kept its place in the dict; a lock released and taken again
    is a new row at the end, as a key popped and set again was.
    """
    locks = SessionLock.objects.order_by("id")
    return locks if confined_to is None else locks.filter(origin_session_key=confined_to)


def lock_table(confined_to: str | None = None) -> dict[str, str]:
    """The original's `active_long_runs_by_session`: session key -> task name."""
    return dict(_locks(confined_to).values_list("origin_session_key", "task__name"))


_M = TypeVar("_M", bound=Model)


def _paged(rows: QuerySet[_M], page: Page | None) -> tuple[list[_M], tuple[int, int] | None]:
    """The rows of `page` (all of them without one), and what `Answer.listed` says of them."""
    if page is None:
        return list(rows), None
    shown = list(rows[page.offset : page.end])
    # A first page that is not full is the whole list: no count needed.
    total = len(shown) if page.offset == 0 and len(shown) < page.limit else rows.count()
    return shown, (len(shown), total)


# --- the watchdog's view, shared by its reports (§7.7, §7.10) ------------------------------------


@dataclass(frozen=True)
class _Survey:
    """Every live task sorted as the watchdog sorts them."""

    due: list[tuple[LongTask, Verdict]]
    progress: list[tuple[LongTask, Verdict]]
    ok: list[str]
    errors: list[dict[str, str]]
    listed: tuple[int, int] | None = None

    def answer(self, body: dict[str, Any], *, action: bool) -> Answer:
        """`body` with the error items of D-B5 when there are any; exit 1 for action or errors."""
        return Answer(
            EXIT_ACTION if action or self.errors else EXIT_OK,
            body | {"errors": self.errors} if self.errors else body,
            self.listed,
        )


def _survey(now: datetime, stale: timedelta, confined_to: str | None, page: Page | None) -> _Survey:
    """The live tasks (one page of them, in creation order, when `page` is given) by verdict."""
    tasks, listed = _paged(live_tasks(confined_to), page)
    survey = _Survey([], [], [], [], listed)
    for task in tasks:
        verdict = watchdog_verdict(task, now, stale)
        if verdict.kind == OK:
            survey.ok.append(task.name)
        elif not task.origin_session_key:
            # The original raised here and the whole run died (D-B5).
            survey.errors.append(
                reports.error_item(task.name, reports.missing_key_error(task.name).text)
            )
        else:
            (survey.due if verdict.kind == RECOVERY else survey.progress).append((task, verdict))
    return survey
