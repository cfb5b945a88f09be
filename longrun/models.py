"""The long-run tables: long tasks, session locks, the transition log and the task log.

The original kept one JSON file (`.task-state.json`) rewritten without file
locking; here each record of §4.3 is a row, the per-session lock table is a
table with a unique key (D-B11), and what the original overwrote is kept:
every state change (D-B17) and every delivery or activity report (D-B8).

The monitors never scan every task. The deadlines that belong to one task are
stored with it (`progress_due_at`, `next_check_at`); the thresholds that are
the same for all (idle, stale) may differ per run (`--idle-seconds`,
`--stale-minutes`), so the clocks they measure are stored instead
(`last_activity_at`, `updated_at`) and a run asks for `clock <= now - threshold`.
Each is indexed, so "what is due now" is an index range scan.
"""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext_lazy as _

from longrun.policies.ladder import NUDGE, RECOVER, RESUME, TELL
from longrun.policies.states import (
    ACTIVE_STATES,
    ANALYZING,
    BLOCKED,
    DELIVERY_STATUSES,
    DONE,
    EXECUTING,
    FAILED,
    FINISHED_STATES,
    HANDOFF,
    PROGRESS_STATES,
    SENT,
    UNKNOWN,
    WAITING,
)
from xworkmate.lib.jstext import KEY_MAX_LENGTH

# Bounds of what an agent may write; a longer value is refused naming the field.
NAME_MAX_LENGTH = 200
LABEL_MAX_LENGTH = 200
# Five of these go into one recovery message, which must fit the outbox's
# 64 KiB body (delivery.max_body_bytes) even in three-byte characters.
TEXT_MAX_LENGTH = 2000
DURATION_MAX_LENGTH = 32
SHA256_LENGTH = 64
LIVE = Q(archived_at__isnull=True)

STATE_CHOICES = (
    (ANALYZING, _("analyzing")),
    (EXECUTING, _("executing")),
    (WAITING, _("waiting")),
    (BLOCKED, _("blocked")),
    (HANDOFF, _("handoff")),
    (DONE, _("done")),
)
DELIVERY_CHOICES = ((SENT, _("sent")), (UNKNOWN, _("unknown")), (FAILED, _("failed")))


class LongTask(models.Model):
    """One long task (§4.3), named by the agent; `set` with the same name updates it.

    Empty strings stand for the original's null. `updated_at` is the task's
    activity clock: the agent's own reports move it, delivery bookkeeping never
    does (D-B9, D-B19). An archived task (D-B16) has left the store: its name
    is free again and no command or monitor sees it.
    """

    name = models.CharField(_("task"), max_length=NAME_MAX_LENGTH)
    # The original's `session` and `session_label`, which it forced equal.
    session_label = models.CharField(_("session label"), max_length=LABEL_MAX_LENGTH, blank=True)
    origin_session_key = models.CharField(
        _("origin session key"),
        max_length=KEY_MAX_LENGTH,
        blank=True,
        help_text=_("The real OpenClaw session the task reports to."),
    )
    state = models.CharField(_("state"), max_length=16, choices=STATE_CHOICES)
    goal = models.TextField(_("goal"), blank=True)
    done_when = models.TextField(_("done when"), blank=True)
    blocked_when = models.TextField(_("blocked when"), blank=True)
    boundary = models.TextField(_("boundary"), blank=True)
    next_check = models.CharField(
        _("next check (as written)"), max_length=TEXT_MAX_LENGTH, blank=True
    )
    # Where next_check names a time (an ISO time, or a duration from updated_at).
    next_check_at = models.DateTimeField(_("checkpoint"), null=True, blank=True)
    note = models.TextField(_("next step"), blank=True)
    progress_every = models.CharField(_("progress interval"), max_length=DURATION_MAX_LENGTH)
    progress_every_seconds = models.PositiveIntegerField(_("progress interval (seconds)"))
    # None in a state that owes no progress (a check constraint).
    progress_due_at = models.DateTimeField(_("progress due at"), null=True, blank=True)

    last_progress_at = models.DateTimeField(_("last visible progress"), null=True, blank=True)
    last_progress_attempt_at = models.DateTimeField(_("last send attempt"), null=True, blank=True)
    last_progress_sent_at = models.DateTimeField(_("last progress sent"), null=True, blank=True)
    last_progress_unknown_at = models.DateTimeField(
        _("last unknown outcome"), null=True, blank=True
    )
    last_progress_delivery_status = models.CharField(
        _("last delivery outcome"), max_length=16, choices=DELIVERY_CHOICES, blank=True
    )
    last_progress_delivery_id = models.CharField(
        _("last delivery id"), max_length=KEY_MAX_LENGTH, blank=True
    )
    last_progress_message_hash = models.CharField(
        _("last message hash"), max_length=SHA256_LENGTH, blank=True
    )
    last_progress_send_error = models.TextField(_("last send error"), blank=True)
    # Heartbeats in a row that did not arrive; a sent one resets it (D-B12).
    undelivered_heartbeats = models.PositiveIntegerField(
        _("undelivered heartbeats in a row"), default=0
    )
    # The outbox message of the heartbeat on its way, until its final answer:
    # a task has one heartbeat in flight at most (D-B20).
    heartbeat_message_id = models.BigIntegerField(
        _("heartbeat in flight (outbox id)"), null=True, blank=True
    )

    last_visible_reply_at = models.DateTimeField(_("last visible reply"), null=True, blank=True)
    last_tool_result_at = models.DateTimeField(_("last tool result"), null=True, blank=True)
    last_resume_at = models.DateTimeField(_("last resume"), null=True, blank=True)
    last_resume_reason = models.CharField(_("last resume reason"), max_length=64, blank=True)
    last_resume_count = models.PositiveIntegerField(_("resumes"), default=0)
    # The newest of the keepalive's activity signals (its idle clock).
    last_activity_at = models.DateTimeField(_("last activity"))

    created_at = models.DateTimeField(_("created at"))
    updated_at = models.DateTimeField(_("updated at"))
    archived_at = models.DateTimeField(_("archived at"), null=True, blank=True)

    class Meta:
        verbose_name = _("long task")
        verbose_name_plural = _("long tasks")
        ordering = ("-updated_at", "-id")
        indexes = [
            # The heartbeat's question: who owes progress now?
            models.Index(
                fields=["progress_due_at"],
                condition=LIVE & Q(progress_due_at__isnull=False),
                name="longrun_task_progress_due",
            ),
            # The watchdog's: whose checkpoint has come, who has gone stale?
            models.Index(
                fields=["next_check_at"],
                condition=LIVE & Q(state__in=ACTIVE_STATES, next_check_at__isnull=False),
                name="longrun_task_checkpoint",
            ),
            models.Index(
                fields=["updated_at"],
                condition=LIVE & Q(state__in=ACTIVE_STATES),
                name="longrun_task_stale",
            ),
            # A session's tasks: an agent key's reads, and the cap on its tasks (D-B26).
            models.Index(
                fields=["origin_session_key"], condition=LIVE, name="longrun_task_session"
            ),
            # The keepalive's: who has been idle too long?
            models.Index(
                fields=["last_activity_at"],
                condition=LIVE & Q(state__in=PROGRESS_STATES),
                name="longrun_task_idle",
            ),
        ]
        constraints = [
            models.UniqueConstraint(fields=["name"], condition=LIVE, name="longrun_task_live_name"),
            models.CheckConstraint(
                condition=Q(state__in=[value for value, _label in STATE_CHOICES]),
                name="longrun_task_state_valid",
            ),
            models.CheckConstraint(
                condition=Q(last_progress_delivery_status__in=("", *DELIVERY_STATUSES)),
                name="longrun_task_delivery_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(progress_every_seconds__gte=1), name="longrun_task_interval_positive"
            ),
            models.CheckConstraint(
                condition=Q(state__in=PROGRESS_STATES) | Q(progress_due_at__isnull=True),
                name="longrun_task_progress_due_only_when_owed",
            ),
            models.CheckConstraint(
                condition=Q(updated_at__gte=F("created_at")),
                name="longrun_task_updated_after_created",
            ),
            # Only a finished task leaves the store (D-B16).
            models.CheckConstraint(
                condition=LIVE | Q(state__in=FINISHED_STATES),
                name="longrun_task_archived_when_finished",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.state})"


class SessionLock(models.Model):
    """One long task per real session key (§4.4, D-B11): the original's lock table."""

    origin_session_key = models.CharField(_("session key"), max_length=KEY_MAX_LENGTH, unique=True)
    task = models.ForeignKey(
        LongTask, on_delete=models.CASCADE, related_name="locks", verbose_name=_("held by")
    )
    acquired_at = models.DateTimeField(_("acquired at"))

    class Meta:
        verbose_name = _("session lock")
        verbose_name_plural = _("session locks")
        ordering = ("origin_session_key",)

    def __str__(self) -> str:
        return self.origin_session_key


class Transition(models.Model):
    """One state change of a task: who, when, from, to and why (D-B17).

    `from_state` is empty for the task's creation.
    """

    # No index of its own: the (task, at) index below serves every lookup by task.
    task = models.ForeignKey(
        LongTask,
        on_delete=models.CASCADE,
        related_name="transitions",
        verbose_name=_("task"),
        db_index=False,
    )
    at = models.DateTimeField(_("at"))
    by = models.CharField(_("by"), max_length=200)
    from_state = models.CharField(_("from"), max_length=16, choices=STATE_CHOICES, blank=True)
    to_state = models.CharField(_("to"), max_length=16, choices=STATE_CHOICES)
    note = models.TextField(_("note"), blank=True)

    class Meta:
        verbose_name = _("state transition")
        verbose_name_plural = _("state transitions")
        ordering = ("task", "at", "id")
        indexes = [models.Index(fields=["task", "at"], name="longrun_transition_task")]
        constraints = [
            models.CheckConstraint(
                condition=~Q(from_state=F("to_state")), name="longrun_transition_changes_state"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.from_state or '∅'} → {self.to_state}"


class TaskEvent(models.Model):
    """The task log: a delivery report, an activity signal, a message queued (D-B8).

    The `--note` of the bookkeeping commands lands here instead of in the
    task's next step. A `queued` event links the task to an outbox message
    (`message_id`); the outbox row itself says what became of it.
    """

    QUEUED = "queued"
    ATTEMPT = "attempt"
    SENT = SENT
    UNKNOWN = UNKNOWN
    FAILED = FAILED
    VISIBLE_REPLY = "visible_reply"
    TOOL_RESULT = "tool_result"
    RESUME = "resume"
    KINDS = (
        (QUEUED, _("message queued")),
        (ATTEMPT, _("send attempted")),
        (SENT, _("sent")),
        (UNKNOWN, _("outcome unknown")),
        (FAILED, _("failed")),
        (VISIBLE_REPLY, _("visible reply")),
        (TOOL_RESULT, _("tool result")),
        (RESUME, _("resumed")),
    )

    # No index of its own: the (task, at) index below serves every lookup by task,
    # and each heartbeat writes one index fewer.
    task = models.ForeignKey(
        LongTask,
        on_delete=models.CASCADE,
        related_name="events",
        verbose_name=_("task"),
        db_index=False,
    )
    at = models.DateTimeField(_("at"))
    by = models.CharField(_("by"), max_length=200)
    kind = models.CharField(_("event"), max_length=16, choices=KINDS)
    # longrun.progress, longrun.resume or longrun.recovery; empty for an activity signal.
    purpose = models.CharField(_("purpose"), max_length=32, blank=True)
    message_id = models.BigIntegerField(_("outbox message"), null=True, blank=True)
    delivery_id = models.CharField(_("delivery id"), max_length=KEY_MAX_LENGTH, blank=True)
    message_hash = models.CharField(_("message hash"), max_length=SHA256_LENGTH, blank=True)
    error = models.TextField(_("error"), blank=True)
    note = models.TextField(_("note"), blank=True)

    class Meta:
        verbose_name = _("task event")
        verbose_name_plural = _("task events")
        ordering = ("task", "at", "id")
        indexes = [models.Index(fields=["task", "at"], name="longrun_event_task")]
        constraints = [
            # One link per outbox message: a message is queued once.
            models.UniqueConstraint(
                fields=["message_id"], condition=Q(kind="queued"), name="longrun_event_queued_once"
            ),
            models.CheckConstraint(
                condition=~Q(kind="queued") | Q(message_id__isnull=False),
                name="longrun_event_queued_has_message",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} at {self.at:%Y-%m-%d %H:%M:%S}"


class LadderStep(models.Model):
    """One rung of a task's escalation ladder (D-B30): which, when, why, and its message.

    Written by the monitors (nudge, resume, recover) and by the ladder itself
    (tell); the task's page lists them in order. A `tell` is once per episode
    (since the last visible progress); the unique idempotency key of its outbox
    message makes a second one from a racing worker the same message.
    """

    RUNG_CHOICES = (
        (NUDGE, _("nudge: progress due")),
        (RESUME, _("resume: idle")),
        (RECOVER, _("recover: overdue")),
        (TELL, _("a person told")),
    )

    task = models.ForeignKey(
        LongTask,
        on_delete=models.CASCADE,
        related_name="ladder",
        verbose_name=_("task"),
        db_index=False,
    )
    at = models.DateTimeField(_("at"))
    by = models.CharField(_("by"), max_length=200)
    rung = models.CharField(_("rung"), max_length=16, choices=RUNG_CHOICES)
    reason = models.TextField(_("why"), blank=True)
    message_id = models.BigIntegerField(_("outbox message"), null=True, blank=True)

    class Meta:
        verbose_name = _("escalation step")
        verbose_name_plural = _("escalation steps")
        ordering = ("task", "at", "id")
        indexes = [models.Index(fields=["task", "at"], name="longrun_ladder_task")]
        constraints = [
            models.CheckConstraint(
                condition=Q(rung__in=(NUDGE, RESUME, RECOVER, TELL)),
                name="longrun_ladder_rung_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.rung} at {self.at:%Y-%m-%d %H:%M:%S}"
