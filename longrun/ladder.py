"""The escalation ladder's write path (D-B30): record each rung a task is taken up, tell a person.

The monitors call `ladder_climb` when they did something for a task that went
quiet (a heartbeat, a resume, a recovery), and the delivery bookkeeping when
undelivered heartbeats turned it blocked; the pure rule (longrun.policies.ladder)
decides whether a person is told now. Runs in the caller's transaction, under
the task's row lock, so the step, the task's change and the message commit or
roll back together; the outbox reaches the person (longrun.escalation).
"""

from __future__ import annotations

from datetime import datetime

from django.urls import reverse

from longrun._rows import _message_key
from longrun.models import LadderStep, LongTask
from longrun.policies import reports
from longrun.policies.ladder import (
    BLOCKED_BY_MISSES,
    RECOVER,
    TELL,
    Episode,
    episode_start,
    escalation_message,
    next_steps,
)
from longrun.policies.states import BLOCKED
from longrun.selectors import longrun_rules
from xworkmate.delivery.services import outbox_enqueue

ESCALATION_PURPOSE = "longrun.escalation"


def ladder_climb(
    task: LongTask,
    done: str,
    *,
    reason: str,
    at: datetime,
    by: str,
    message_id: int | None = None,
    once_since: datetime | None = None,
) -> list[LadderStep]:
    """Record `done` (a rung, or BLOCKED_BY_MISSES) and, when this episode earned it and has
    not had it, the person told; the steps written, in order.

    `once_since`: the rung is recorded once from then on (a planned resume is planned
    again at every keepalive run of one idle spell; the ladder shows the spell once).
    """
    if once_since is not None and LadderStep.objects.filter(
        task=task, rung=done, at__gte=once_since
    ).exists():
        return []
    rules = longrun_rules()
    since = episode_start(task, task.created_at)
    in_episode = LadderStep.objects.filter(task=task, at__gte=since)
    episode = Episode(
        recoveries=in_episode.filter(rung=RECOVER).count(),
        told=in_episode.filter(rung=TELL).exists(),
    )
    steps = next_steps(
        done,
        reason,
        episode,
        misses=task.undelivered_heartbeats,
        recoveries_before_telling=rules.escalate_after_recoveries,
    )
    written: list[LadderStep] = []
    for step in steps:
        linked = message_id if step.rung == done else None
        if step.rung == TELL:
            linked = _tell(task, step.reason, since=since, at=at)
        written.append(
            LadderStep.objects.create(
                task=task, at=at, by=by, rung=step.rung, reason=step.reason, message_id=linked
            )
        )
    return written


def ladder_after_misses(task: LongTask, fields: list[str], *, at: datetime, by: str) -> None:
    """After the delivery bookkeeping: if undelivered heartbeats just turned the task
    blocked (`state` among the fields it wrote), the ladder may tell a person."""
    if "state" not in fields or task.state != BLOCKED:
        return
    transition = task.transitions.order_by("-at", "-id").first()
    reason = transition.note if transition is not None else task.last_progress_send_error
    ladder_climb(task, BLOCKED_BY_MISSES, reason=reason, at=at, by=by)


def _tell(task: LongTask, why: str, *, since: datetime, at: datetime) -> int | None:
    """Queue the person's message, one per episode: its key names the episode's start."""
    if not task.origin_session_key:
        return None  # the outbox needs a session; the step on the page still tells
    rules = longrun_rules()
    text = escalation_message(
        task,
        why,
        since=reports.wire_time(since, rules.zone) or "",
        page=reverse("admin:longrun_longtask_change", args=[task.pk]),
    )
    message = outbox_enqueue(
        purpose=ESCALATION_PURPOSE,
        target=task.origin_session_key,
        body=text,
        idempotency_key=_message_key(task, "esc", str(int(since.timestamp()))),
        now=at,
    )
    return int(message.pk)
