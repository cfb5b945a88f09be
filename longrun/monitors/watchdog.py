"""The watchdog: send each overdue task its recovery message, or its heartbeat (§7.10)."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Q

from longrun._rows import RECOVERY_PURPOSE, _already_queued, _log, _message_key
from longrun.ladder import ladder_climb
from longrun.models import LongTask, TaskEvent
from longrun.monitors._common import _claim, _heartbeat, _reported_in
from longrun.policies import reports
from longrun.policies.answers import EXIT_ACTION, EXIT_OK, Answer
from longrun.policies.facts import Rules
from longrun.policies.ladder import RECOVER
from longrun.policies.states import ACTIVE_STATES
from longrun.policies.timing import (
    PROGRESS,
    RECOVERY,
    Verdict,
    stale_limit,
    watchdog_verdict,
    whole_second,
)
from longrun.selectors import live_tasks, longrun_rules
from xworkmate.claims import claim_and_handle
from xworkmate.delivery.services import outbox_enqueue


def _recovery_token(task: LongTask, reason: str, now: datetime, stale: timedelta) -> str:
    """One recovery message per task, reason and stale window (D-B20)."""
    window = int(now.timestamp()) // max(1, int(stale.total_seconds()))
    raw = json.dumps(
        {
            "task": task.name,
            "state": task.state,
            "sessionKey": task.origin_session_key,
            "reason": reason,
            "window": window,
        },
        ensure_ascii=False,
        sort_keys=True,
    )
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def _recover(
    task: LongTask, verdict: Verdict, *, now: datetime, stale: timedelta, rules: Rules, by: str
) -> dict[str, Any]:
    """Queue an overdue task's recovery message, or its heartbeat: its payload."""
    if not task.origin_session_key:
        raise reports.missing_key_error(task.name)
    item = reports.recovery_item(task, verdict, rules.zone)
    payload = reports.watchdog_payload(task, item)
    if verdict.kind == PROGRESS:
        status, event = _heartbeat(
            task, now=now, stale=stale, cooldown=rules.unknown_cooldown, by=by
        )
        payload["status"] = status
        if event is not None and "message_id" in event:
            payload |= {"message": event["message"], "message_id": event["message_id"]}
        return payload
    message = outbox_enqueue(
        purpose=RECOVERY_PURPOSE,
        target=task.origin_session_key,
        body=payload["message"],
        idempotency_key=_message_key(task, "rc", _recovery_token(task, verdict.reason, now, stale)),
        now=now,
    )
    payload["message_id"] = message.pk
    if _already_queued(message.pk):
        payload["status"] = "already_queued"
        return payload
    payload["status"] = "queued"
    _log(task, TaskEvent.QUEUED, at=now, by=by, purpose=RECOVERY_PURPOSE, message_id=message.pk)
    # D-B30: the third rung; the ladder tells a person after enough of them.
    ladder_climb(task, RECOVER, reason=verdict.reason, at=now, by=by, message_id=message.pk)
    return payload


def watchdog_run_once(
    *, now: datetime, stale: timedelta | None = None, by: str = "watchdog"
) -> Answer:
    """run_watchdog_once: send each overdue task its recovery message (the monitor).

    A task past its checkpoint or stale gets its recovery suggestion through
    the outbox (`longrun.recovery`), once per stale window; a task that owes
    progress gets its heartbeat, the very one the heartbeat monitor would
    queue (one message per slot whichever runs first). Each payload is the
    original's, with the outbox message it became and its status.
    """
    now = whole_second(now)
    rules = longrun_rules()
    stale = stale or rules.stale
    # One indexed range scan per deadline rather than one OR the planner may
    # answer with a scan of every active task.
    active = live_tasks().filter(state__in=ACTIVE_STATES)
    candidates: dict[int, str] = {}
    for deadline in (
        Q(next_check_at__lte=now),
        Q(updated_at__lte=stale_limit(now, stale)),
        Q(progress_due_at__lte=now),
    ):
        candidates.update(active.filter(deadline).values_list("pk", "name"))
    payloads: list[dict[str, Any]] = []
    counts = {RECOVERY: 0, PROGRESS: 0}
    errors: list[dict[str, str]] = []

    def handle(task: LongTask) -> None:
        verdict = watchdog_verdict(task, now, stale)
        if verdict.kind in counts:
            payloads.append(_recover(task, verdict, now=now, stale=stale, rules=rules, by=by))
            counts[verdict.kind] += 1

    claim_and_handle(
        sorted(candidates.items()), claim=_claim, handle=handle, failed=_reported_in(errors)
    )
    body: dict[str, Any] = {
        "due_count": counts[RECOVERY],
        "progress_count": counts[PROGRESS],
        "tool": "sessions_send",
        "payloads": payloads,
    }
    if errors:
        body["errors"] = errors
    return Answer(EXIT_ACTION if payloads or errors else EXIT_OK, body)
