"""The foreground heartbeat's reads (§7.3–§7.8).

Its check, its message, its ticks, and the events due now with their dispatch plan.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from longrun.policies import reports
from longrun.policies.answers import Answer
from longrun.policies.messages import DISPATCH_NOTE
from longrun.policies.timing import progress_slot, recently_unknown, whole_second
from longrun.selectors._common import _Survey, _survey, longrun_rules, task_named
from xworkmate.lib.paging import Page

# --- the foreground heartbeat (§7.3–§7.6) --------------------------------------------------------


def foreground_check(*, name: str, now: datetime, confined_to: str | None = None) -> Answer:
    return reports.foreground_check(
        task_named(name, confined_to), whole_second(now), longrun_rules().zone
    )


def progress_update(*, name: str, confined_to: str | None = None) -> Answer:
    return reports.progress_update(task_named(name, confined_to))


def foreground_tick(*, name: str, now: datetime, confined_to: str | None = None) -> Answer:
    return reports.foreground_tick(
        task_named(name, confined_to), whole_second(now), longrun_rules().zone
    )


def work_cycle_tick(
    *, name: str, step: str = "", now: datetime, confined_to: str | None = None
) -> Answer:
    return reports.work_cycle_tick(
        task_named(name, confined_to), step=step, now=whole_second(now), zone=longrun_rules().zone
    )


# --- foreground events (§7.7, §7.8) --------------------------------------------------------------


def _foreground_events(
    now: datetime, stale: timedelta, cooldown: timedelta, confined_to: str | None, page: Page | None
) -> tuple[list[dict[str, Any]], list[dict[str, str]], _Survey]:
    survey = _survey(now, stale, confined_to, page)
    events: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    for task, verdict in survey.progress:
        event = reports.foreground_event(
            task, reason=verdict.reason, slot=progress_slot(now, task.progress_every_seconds)
        )
        if recently_unknown(task, event.message_hash, now, cooldown):
            skipped.append(event.skipped())
        else:
            events.append(event.body)
    return events, skipped, survey


def foreground_due_events(
    *,
    now: datetime,
    stale: timedelta | None = None,
    unknown_cooldown: timedelta | None = None,
    confined_to: str | None = None,
    page: Page | None = None,
) -> Answer:
    """emit_foreground_due.py: the heartbeat events due now (generated, not sent).

    Only the watchdog's `progress` tasks: a task that needs recovery gets none.
    """
    rules = longrun_rules()
    events, skipped, survey = _foreground_events(
        whole_second(now),
        stale or rules.stale,
        unknown_cooldown or rules.unknown_cooldown,
        confined_to,
        page,
    )
    body = {
        "event_count": len(events),
        "events": events,
        "skipped_unknown_count": len(skipped),
        "skipped_unknown": skipped,
    }
    return survey.answer(body, action=bool(events))


def foreground_dispatch_plan(
    *,
    now: datetime,
    unknown_cooldown: timedelta | None = None,
    confined_to: str | None = None,
    page: Page | None = None,
) -> Answer:
    """dispatch_foreground_due.py: the sessions_send plan for the due events.

    As in the original, the stale window is not a parameter: the configured one applies.
    """
    rules = longrun_rules()
    events, skipped, survey = _foreground_events(
        whole_second(now),
        rules.stale,
        unknown_cooldown or rules.unknown_cooldown,
        confined_to,
        page,
    )
    dispatches = [reports.dispatch_of(event) for event in events]
    body = {
        "dispatch_count": len(dispatches),
        "dispatches": dispatches,
        "skipped_unknown_count": len(skipped),
        "skipped_unknown": skipped,
        "note": DISPATCH_NOTE,
    }
    return survey.answer(body, action=bool(dispatches))
