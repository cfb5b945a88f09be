"""The heartbeat monitor: queue the visible progress every task owes (§7.7, §7.8)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from longrun.models import LongTask
from longrun.monitors._common import _claim, _heartbeat, _reported_in
from longrun.policies.answers import EXIT_ACTION, EXIT_OK, Answer
from longrun.policies.timing import whole_second
from longrun.selectors import live_tasks, longrun_rules
from xworkmate.claims import claim_and_handle


def heartbeat_run_once(
    *,
    now: datetime,
    stale: timedelta | None = None,
    unknown_cooldown: timedelta | None = None,
    by: str = "heartbeat",
) -> Answer:
    """Queue the heartbeat of every task that owes visible progress (the monitor).

    emit_foreground_due and its dispatcher, with the outbox doing the send:
    the events are the original's (the slot's hash and delivery id), a task
    that needs recovery gets none, and what the channel answers is recorded
    by `progress_outcome_record`.
    """
    now = whole_second(now)
    rules = longrun_rules()
    stale = stale or rules.stale
    cooldown = unknown_cooldown or rules.unknown_cooldown
    candidates = (
        live_tasks()
        .filter(progress_due_at__lte=now, heartbeat_message_id__isnull=True)
        .order_by("progress_due_at", "id")
        .values_list("pk", "name")
    )
    events: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    errors: list[dict[str, str]] = []

    def handle(task: LongTask) -> None:
        status, body = _heartbeat(task, now=now, stale=stale, cooldown=cooldown, by=by)
        if status == "queued" and body is not None:
            events.append(body)
        elif status == "skipped_unknown" and body is not None:
            skipped.append(body)

    claim_and_handle(list(candidates), claim=_claim, handle=handle, failed=_reported_in(errors))
    body: dict[str, Any] = {
        "event_count": len(events),
        "events": events,
        "skipped_unknown_count": len(skipped),
        "skipped_unknown": skipped,
    }
    if errors:
        body["errors"] = errors
    return Answer(EXIT_ACTION if events or errors else EXIT_OK, body)
