"""What the monitors share: the claim-and-handle glue, and a task's heartbeat.

Every monitor runs the kernel's claim-and-handle loop (xworkmate.claims,
D-K17) over its candidates, a task that fails being an error item of the run
(D-B5). The heartbeat monitor and the watchdog queue the same heartbeat for a
task that owes progress: one message per slot, whichever runs first.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from longrun._rows import PROGRESS_PURPOSE, _already_queued, _log, _message_key
from longrun.ladder import ladder_climb
from longrun.models import LIVE, LongTask, TaskEvent
from longrun.policies import reports
from longrun.policies.answers import LongrunError
from longrun.policies.ladder import NUDGE
from longrun.policies.timing import PROGRESS, progress_slot, recently_unknown, watchdog_verdict
from xworkmate.claims import claim_row
from xworkmate.delivery.services import outbox_enqueue

# The monitors' log lines keep the name they had when the monitors were services.
logger = logging.getLogger("longrun.services")


# --- the claim-and-handle glue -------------------------------------------------------------------


# What a monitor hands the loop: a task's id and its name (for the error item).
Candidate = tuple[int, str]


def _claim(candidate: Candidate) -> LongTask | None:
    """The live task of `candidate` if no other worker holds it; None otherwise (it is theirs)."""
    return claim_row(LongTask.objects.filter(LIVE), candidate[0])


def _reported_in(errors: list[dict[str, str]]) -> Callable[[Candidate, Exception], None]:
    """The loop's `failed`: a task that fails becomes an error item of the run, which goes on."""

    def failed(candidate: Candidate, exc: Exception) -> None:
        name = candidate[1]
        if isinstance(exc, LongrunError):
            # Refused, not broken: no traceback, but the operator reads it in the log.
            logger.warning("long task %r: the run could not handle it: %s", name, exc.text)
            errors.append(reports.error_item(name, exc.text))
        else:
            logger.exception("long task %r: the run could not handle it", name)
            errors.append(reports.error_item(name, f"{type(exc).__name__}: {exc}"))

    return failed


# --- the heartbeat of a task that owes progress (§7.7, §7.8) -------------------------------------


def _heartbeat(
    task: LongTask,
    *,
    now: datetime,
    stale: timedelta,
    cooldown: timedelta,
    by: str,
) -> tuple[str, dict[str, Any] | None]:
    """Queue the task's heartbeat if it is due: (status, event with its outbox id).

    Statuses: `queued`; `already_queued` (this slot's heartbeat went out before:
    the slot's idempotency key gives the same message back); `in_flight`
    (an earlier heartbeat still waits for its final answer: one at a time,
    D-B20); `skipped_unknown` (this very heartbeat had an unknown outcome
    within the cooldown); `not_due`.
    """
    verdict = watchdog_verdict(task, now, stale)
    if verdict.kind != PROGRESS:
        return "not_due", None
    if task.heartbeat_message_id is not None:
        return "in_flight", None
    if not task.origin_session_key:
        raise reports.missing_key_error(task.name)
    event = reports.foreground_event(
        task, reason=verdict.reason, slot=progress_slot(now, task.progress_every_seconds)
    )
    if recently_unknown(task, event.message_hash, now, cooldown):
        return "skipped_unknown", event.skipped()
    message = outbox_enqueue(
        purpose=PROGRESS_PURPOSE,
        target=task.origin_session_key,
        body=event.message,
        idempotency_key=_message_key(task, "fg", event.message_hash),
        now=now,
    )
    body = event.body | {"message_id": message.pk}
    if _already_queued(message.pk):
        return "already_queued", body
    _log(
        task,
        TaskEvent.QUEUED,
        at=now,
        by=by,
        purpose=PROGRESS_PURPOSE,
        message_id=message.pk,
        delivery_id=event.delivery_id,
        message_hash=event.message_hash,
    )
    task.heartbeat_message_id = message.pk
    task.save(update_fields=["heartbeat_message_id"])
    # D-B30: the ladder's first rung.
    ladder_climb(task, NUDGE, reason=verdict.reason, at=now, by=by, message_id=message.pk)
    return "queued", body
