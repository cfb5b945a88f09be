"""The watchdog's reports (§7.7, §7.10).

check, recover_due_tasks, the recovery messages and their sessions_send payloads.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from longrun.models import LongTask
from longrun.policies import reports
from longrun.policies.answers import Answer
from longrun.policies.facts import Rules
from longrun.policies.timing import whole_second
from longrun.selectors._common import _Survey, _survey, longrun_rules
from xworkmate.lib.paging import Page


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
