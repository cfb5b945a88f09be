"""The outbox: one row per message the service sends, and one per attempt to send it."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from xworkmate.lib.jstext import KEY_MAX_LENGTH

# New messages a worker was asked to send: pending with a time to be sent by
# (a record channel's pending messages have none; they wait for the bridge).
NEW_FOR_A_WORKER = models.Q(status="pending", next_attempt_at__isnull=False)


class Message(models.Model):
    """One message, from the state change that caused it to its last send's outcome.

    `status` says only what the channel confirmed (D-B10): `pending` (not sent
    yet, or waiting for the bridge to fetch and acknowledge it), `sent` (the
    receiver confirmed it), `unknown` (a send was started and its outcome is not
    known: a timeout, or a worker that died mid-send) and `failed` (it did not
    arrive). `next_attempt_at` is when a dispatcher may send it (again); None
    means never by itself: sent, waiting for an acknowledgement, or given up.
    """

    PENDING = "pending"
    SENT = "sent"
    UNKNOWN = "unknown"
    FAILED = "failed"
    STATUSES = (
        (PENDING, _("pending")),
        (SENT, _("sent")),
        (UNKNOWN, _("unknown")),
        (FAILED, _("failed")),
    )

    purpose = models.CharField(_("purpose"), max_length=64)
    channel = models.CharField(_("channel"), max_length=64)
    target = models.CharField(_("target session"), max_length=KEY_MAX_LENGTH)
    body = models.TextField(_("body"))
    body_hash = models.CharField(_("body SHA-256"), max_length=64)
    idempotency_key = models.CharField(_("idempotency key"), max_length=KEY_MAX_LENGTH)
    status = models.CharField(_("status"), max_length=16, choices=STATUSES, default=PENDING)
    attempt_count = models.PositiveIntegerField(_("attempts"), default=0)
    next_attempt_at = models.DateTimeField(_("next attempt at"), null=True, blank=True)
    last_error = models.TextField(_("last error"), blank=True)
    created_at = models.DateTimeField(_("created at"), default=timezone.now)
    updated_at = models.DateTimeField(_("updated at"), default=timezone.now)
    sent_at = models.DateTimeField(_("sent at"), null=True, blank=True)
    # Taken by a worker's batch and not yet started (D-K30): the batch's token and
    # until when it holds it. The status stays what it was (pending, failed,
    # unknown): nothing of the message left the service yet. A batch that dies
    # leaves the claim to expire; the message is then claimable again, unchanged.
    claimed_by = models.CharField(_("claimed by"), max_length=64, blank=True)
    claim_expires_at = models.DateTimeField(_("claim expires at"), null=True, blank=True)
    # D-K33: the channel the message was first routed to, when its circuit breaker moved
    # it to `channel` (its fallback); and what the breaker did with it, in words: moved
    # (where, when, why) or held (why, until when). Blank when no breaker touched it.
    routed_from = models.CharField(_("moved from channel"), max_length=64, blank=True)
    route_note = models.TextField(_("circuit breaker note"), blank=True)
    # A person asked for another send (admin action); the next attempt records who.
    resend_requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("re-send requested by"),
    )

    class Meta:
        verbose_name = _("outbox message")
        verbose_name_plural = _("outbox messages")
        ordering = ("-created_at", "-id")
        indexes = [
            # The dispatcher's question: what is due now, most overdue first? The id
            # settles ties in the claim's order, so the index gives that order whole
            # and a claim stops at its batch size (D-K46).
            models.Index(fields=["next_attempt_at", "id"], name="delivery_message_due"),
            # The workers' question: which new messages wait, oldest first? (D-K11, D-K30)
            models.Index(fields=["id"], condition=NEW_FOR_A_WORKER, name="delivery_message_new"),
            # The bridge's question: what waits for this session?
            models.Index(fields=["target", "status"], name="delivery_message_target"),
            models.Index(fields=["status", "created_at"], name="delivery_message_status"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["purpose", "target", "idempotency_key"], name="delivery_message_once"
            ),
            models.CheckConstraint(
                condition=models.Q(updated_at__gte=models.F("created_at")),
                name="delivery_message_updated_after_created",
            ),
            # Sent exactly when confirmed, and then never sent again by itself.
            models.CheckConstraint(
                condition=(
                    models.Q(status="sent", sent_at__isnull=False, next_attempt_at__isnull=True)
                    | (~models.Q(status="sent") & models.Q(sent_at__isnull=True))
                ),
                name="delivery_message_sent_consistent",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.purpose} → {self.target} ({self.status})"


class Attempt(models.Model):
    """One send of a message: when it started and ended, and its outcome.

    An attempt row is written in the transaction that commits just before its send
    starts (D-K30), so every row is a send that began. Without `finished_at` it
    is still under way, or its worker stopped before reporting an answer; the
    dispatch job closes such a row once no worker can still be sending it
    (`unknown`, the detail saying it was abandoned).
    """

    OUTCOMES = (
        ("sent", _("sent")),
        ("unknown", _("unknown")),
        ("failed", _("failed")),
        ("acknowledged", _("acknowledged")),
    )

    message = models.ForeignKey(
        Message, on_delete=models.CASCADE, related_name="attempts", verbose_name=_("message")
    )
    number = models.PositiveIntegerField(_("number"))
    channel = models.CharField(_("channel"), max_length=64)
    started_at = models.DateTimeField(_("started at"))
    finished_at = models.DateTimeField(_("finished at"), null=True, blank=True)
    outcome = models.CharField(_("outcome"), max_length=16, choices=OUTCOMES, blank=True)
    detail = models.TextField(_("detail"), blank=True)
    by = models.CharField(
        _("by"),
        max_length=200,
        blank=True,
        help_text=_("Who caused it: a worker, the dispatch job, a person re-sending, a key's ack."),
    )
    resent_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("re-sent by"),
    )

    class Meta:
        verbose_name = _("delivery attempt")
        verbose_name_plural = _("delivery attempts")
        ordering = ("message", "number")
        constraints = [
            models.UniqueConstraint(fields=["message", "number"], name="delivery_attempt_once"),
            models.CheckConstraint(
                condition=models.Q(finished_at__isnull=True)
                | models.Q(finished_at__gte=models.F("started_at")),
                name="delivery_attempt_finished_after_started",
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.number} {self.outcome or 'in flight'}"


class Breaker(models.Model):
    """The circuit breaker of one pushed channel (D-K33); a row exists once a send failed.

    `closed`: sends go out, consecutive failures are counted (a sent one resets
    them). `open`: no send to the channel; its messages go to its fallback or are
    held, until `probe_after`. `half_open`: one probe send (`probe_message_id`) is
    allowed; its answer closes the breaker or opens it again. Every change is one
    conditional UPDATE or happens under the row's lock, so two workers never
    open, probe or close it twice.
    """

    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"
    STATES = ((CLOSED, _("closed")), (OPEN, _("open")), (HALF_OPEN, _("half-open (probing)")))

    channel = models.CharField(_("channel"), max_length=64, unique=True)
    state = models.CharField(_("state"), max_length=16, choices=STATES, default=CLOSED)
    failures = models.PositiveIntegerField(_("consecutive failed sends"), default=0)
    last_error = models.TextField(_("last error"), blank=True)
    last_target = models.CharField(
        _("session of the last failed send"), max_length=KEY_MAX_LENGTH, blank=True
    )
    opened_at = models.DateTimeField(_("opened at"), null=True, blank=True)
    probe_after = models.DateTimeField(_("probe after"), null=True, blank=True)
    probe_message_id = models.BigIntegerField(_("probe (outbox id)"), null=True, blank=True)
    times_opened = models.PositiveIntegerField(_("times opened"), default=0)
    changed_at = models.DateTimeField(_("changed at"), default=timezone.now)
    note = models.TextField(_("what happened last"), blank=True)

    class Meta:
        verbose_name = _("channel circuit breaker")
        verbose_name_plural = _("channel circuit breakers")
        ordering = ("channel",)
        constraints = [
            models.CheckConstraint(
                condition=models.Q(state__in=("closed", "open", "half_open")),
                name="delivery_breaker_state_valid",
            ),
            # Open or probing: since when and until when it waits.
            models.CheckConstraint(
                condition=models.Q(state="closed")
                | models.Q(opened_at__isnull=False, probe_after__isnull=False),
                name="delivery_breaker_open_has_times",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.channel} ({self.state})"
