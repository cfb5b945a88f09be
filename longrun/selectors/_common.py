"""Reads of long-run mode: each read-only script of the original as one function (§7).

Each answers an `Answer`, the original's output and exit code (D-B18), or
raises a `LongrunError`. The rules are in longrun.policies; these functions
load the rows and hand them over. The reports that walk every task (the
watchdog's) read the live tasks in creation order, as the original walked its
JSON object; one task they cannot handle is an error item, and the report
goes on (D-B5).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.db.models import Model, QuerySet

from longrun.conf import longrun_conf
from longrun.models import LIVE, LongTask, SessionLock
from longrun.policies import reports
from longrun.policies.answers import (
    EXIT_ACTION,
    EXIT_INVALID,
    EXIT_OK,
    Answer,
    LongrunError,
)
from longrun.policies.facts import Rules
from longrun.policies.messages import DISPATCH_NOTE
from longrun.policies.states import ACTIVE_STATES, STATES
from longrun.policies.timing import (
    OK,
    RECOVERY,
    Verdict,
    progress_slot,
    recently_unknown,
    watchdog_verdict,
    whole_second,
)
from longrun.policies.trigger import is_trigger
from xworkmate.lib.paging import Page
from xworkmate.lib.timezones import get_zone
from xworkmate.lib.wire import js_trim

__all__ = [
    "foreground_check",
    "foreground_dispatch_plan",
    "foreground_due_events",
    "foreground_tick",
    "keepalive_resume_event",
    "keepalive_tick",
    "live_tasks",
    "lock_table",
    "locks_show",
    "longrun_rules",
    "message_mode",
    "progress_update",
    "recovery_messages",
    "recovery_report",
    "sessions_send_payloads",
    "state_export",
    "task_named",
    "task_show",
    "task_start_validation",
    "tasks_list",
    "watchdog_check",
    "work_cycle_tick",
]


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
    locks = SessionLock.objects.order_by("origin_session_key")
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


# --- task_state.py's reads (§7.1) ----------------------------------------------------------------


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


# --- the trigger (§2, D-B1) ----------------------------------------------------------------------


def message_mode(*, message: str, session_key: str = "") -> Answer:
    """detect-trigger: does a message enter long-run mode, continue the session's task, or neither?

    Only a configured phrase asked for enters (D-B1); any other message in a
    session whose lock an active task holds means "go on with it" (§2.2 R4).
    Exit 1 when the agent has something to do (enter, or run the work-cycle
    check first), 0 for an ordinary message.
    """
    phrases = longrun_conf().trigger_phrases
    phrase = max((p for p in phrases if p and p in message), key=len, default=None)
    key = js_trim(session_key)
    lock = (
        SessionLock.objects.select_related("task")
        .filter(origin_session_key=key, task__state__in=ACTIVE_STATES)
        .first()
        if key
        else None
    )
    active = lock.task if lock is not None else None
    asks = is_trigger(message, phrases)
    if asks:
        mode = "enter"
        reason = f"the message asks for long-run mode ({phrase}): announce, set, then validate"
        if active is not None:
            reason += (
                f"; the session's lock is held by the active task {active.name}: registering "
                "another task needs --force-lock (else exit 3)"
            )
    else:
        mentioned = (
            f"the message mentions {phrase} without asking for it (a negation or a question)"
            if phrase
            else "no trigger phrase"
        )
        if active is not None:
            mode = "continue"
            reason = (
                f"{mentioned}; the session has the active long task {active.name} "
                f"({active.state}): go on with it, running work_cycle_tick first"
            )
        else:
            mode = "ordinary"
            where = "this session" if key else "a session (no session key given)"
            reason = f"{mentioned}, and no active long task in {where}: an ordinary message"
    return Answer(
        EXIT_OK if mode == "ordinary" else EXIT_ACTION,
        {
            "mode": mode,
            "trigger": asks,
            "phrase": phrase,
            "session_key": key or None,
            "active_task": active.name if active is not None else None,
            "active_state": active.state if active is not None else None,
            "reason": reason,
        },
    )


# --- validate_task_start.py (§7.2) ---------------------------------------------------------------


def task_start_validation(
    *,
    name: str,
    expect_session_key: str = "",
    expect_states: Iterable[str] = (),
    confined_to: str | None = None,
) -> Answer:
    """Whether the task really started in its target session: only then may the agent say so."""
    states = list(expect_states) or list(ACTIVE_STATES)
    for state in states:
        if state not in STATES:
            raise LongrunError(
                exit_code=EXIT_INVALID,
                body=f"invalid state: {state}",
                field="expect_state",
                rule=f"must be one of {', '.join(STATES)}",
            )
    task = live_tasks(confined_to).filter(name=js_trim(name)).first()
    if task is None:
        return reports.start_validation_not_found(name)
    owner = (
        SessionLock.objects.filter(origin_session_key=task.origin_session_key)
        .values_list("task__name", flat=True)
        .first()
        if task.origin_session_key
        else None
    )
    return reports.start_validation(
        task,
        lock_owner=owner,
        expect_session_key=js_trim(expect_session_key),
        expect_states=states,
    )


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


def watchdog_check(
    *,
    now: datetime,
    stale: timedelta | None = None,
    confined_to: str | None = None,
    page: Page | None = None,
) -> Answer:
    """watchdog.py check --json: which tasks need recovery, which a progress update."""
    rules = longrun_rules()
    survey = _survey(whole_second(now), stale or rules.stale, confined_to, page)
    body = {
        "due": [reports.watchdog_summary(task, v, rules.zone) for task, v in survey.due],
        "progress": [reports.watchdog_summary(task, v, rules.zone) for task, v in survey.progress],
        "ok": survey.ok,
    }
    return survey.answer(body, action=bool(survey.due or survey.progress))


def _recovery_items(survey: _Survey, rules: Rules) -> list[tuple[LongTask, dict[str, Any]]]:
    return [
        (task, reports.recovery_item(task, verdict, rules.zone))
        for task, verdict in (*survey.due, *survey.progress)
    ]


def recovery_report(
    *,
    now: datetime,
    stale: timedelta | None = None,
    confined_to: str | None = None,
    page: Page | None = None,
) -> Answer:
    """recover_due_tasks.py --json: each overdue task with its recovery suggestion."""
    rules = longrun_rules()
    survey = _survey(whole_second(now), stale or rules.stale, confined_to, page)
    items = [item for _, item in _recovery_items(survey, rules)]
    body = {"due_count": len(survey.due), "progress_count": len(survey.progress), "items": items}
    return survey.answer(body, action=bool(items))


def recovery_messages(
    *,
    now: datetime,
    stale: timedelta | None = None,
    confined_to: str | None = None,
    page: Page | None = None,
) -> Answer:
    """emit_recovery_message.py --json: the human-readable message of each item."""
    rules = longrun_rules()
    survey = _survey(whole_second(now), stale or rules.stale, confined_to, page)
    messages = [
        reports.recovery_message_item(task, item) for task, item in _recovery_items(survey, rules)
    ]
    body = {
        "due_count": len(survey.due),
        "progress_count": len(survey.progress),
        "messages": messages,
    }
    return survey.answer(body, action=bool(messages))


def sessions_send_payloads(
    *,
    now: datetime,
    stale: timedelta | None = None,
    confined_to: str | None = None,
    page: Page | None = None,
) -> Answer:
    """build_sessions_send_payloads.py: one sessions_send payload per item (not sent)."""
    rules = longrun_rules()
    survey = _survey(whole_second(now), stale or rules.stale, confined_to, page)
    payloads = [
        reports.sessions_send_payload(task, reports.recovery_message_item(task, item))
        for task, item in _recovery_items(survey, rules)
    ]
    body = {
        "due_count": len(survey.due),
        "progress_count": len(survey.progress),
        "tool": "sessions_send",
        "payloads": payloads,
    }
    return survey.answer(body, action=bool(payloads))


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


# --- keepalive (§7.9) ----------------------------------------------------------------------------


def keepalive_tick(
    *, name: str, now: datetime, idle: timedelta | None = None, confined_to: str | None = None
) -> Answer:
    rules = longrun_rules()
    return reports.keepalive_tick(
        task_named(name, confined_to), whole_second(now), idle or rules.idle, rules.zone
    )


def keepalive_resume_event(
    *, name: str, now: datetime, idle: timedelta | None = None, confined_to: str | None = None
) -> Answer:
    """emit_keepalive_resume.py: the resume event of an idle task (generated, not sent)."""
    rules = longrun_rules()
    return reports.keepalive_event(
        task_named(name, confined_to), whole_second(now), idle or rules.idle, rules.zone
    )
