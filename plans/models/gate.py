"""The gate's tables: a person's confirmation of a revision, or a request to change it.

A confirmation copies what it confirms (the revision's content hash, turn and
number) so that its check constraints refuse what the service must (D-C5,
D-C13, D-C18).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from plans.models._common import ID_MAX_LENGTH, SHA256_LENGTH
from plans.models.plan import Entry, Revision


class Confirmation(models.Model):
    """A person's explicit confirmation of one revision of one entry (D-C5)."""

    ADMIN = "admin"
    API = "api"
    CHANNELS = ((ADMIN, _("admin action")), (API, _("user message over the API")))

    entry = models.ForeignKey(
        Entry, on_delete=models.CASCADE, related_name="confirmations", verbose_name=_("entry")
    )
    revision = models.ForeignKey(
        Revision, on_delete=models.PROTECT, related_name="confirmations", verbose_name=_("revision")
    )
    # Copied from the revision when confirming, so the table itself can refuse
    # a confirmation of other content or from the writing turn.
    revision_sha256 = models.CharField(_("revision SHA-256"), max_length=SHA256_LENGTH)
    # D-C25: what the person confirmed, bound to the content: the SHA-256 of the entry's
    # own text in that PLAN.md (planfile.entry_text), and the schedule exactly as the job
    # runs it (stored_schedule: kind lower-cased, an every's anchor, a top-of-hour
    # stagger). Before D-C25 the schedule was not kept: None on those rows.
    entry_sha256 = models.CharField(_("entry text SHA-256"), max_length=SHA256_LENGTH, blank=True)
    schedule = models.JSONField(_("normalised schedule"), null=True, blank=True)
    revision_turn_id = models.CharField(_("revision's turn"), max_length=ID_MAX_LENGTH, blank=True)
    how = models.CharField(_("how"), max_length=8, choices=CHANNELS)
    turn_id = models.CharField(_("turn"), max_length=ID_MAX_LENGTH, blank=True)
    message = models.TextField(_("user message"), blank=True)
    confirmed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("confirmed by"),
    )
    # Over the API: the key that relayed the user's message (its name; keys may go).
    relayed_by = models.CharField(_("relayed by"), max_length=200, blank=True)
    # D-C18, copied when confirming so the table can refuse what the service must:
    # the revision's number and whether its author is known (written over the API
    # by a named turn), the newest revision the confirming turn had seen recorded
    # when this plan first saw it (None: never seen before), and whether an agent
    # key relayed it.
    revision_number = models.PositiveIntegerField(_("revision number"))
    revision_author_known = models.BooleanField(_("revision's author known"))
    turn_seen_after = models.PositiveIntegerField(_("turn first seen after"), null=True)
    by_agent = models.BooleanField(_("relayed by an agent key"), default=False)
    confirmed_at = models.DateTimeField(_("confirmed at"), default=timezone.now)

    class Meta:
        verbose_name = _("confirmation")
        verbose_name_plural = _("confirmations")
        ordering = ("-confirmed_at", "-id")
        constraints = [
            # One confirmation per revision of an entry: two racing confirmations
            # end with exactly one row.
            models.UniqueConstraint(fields=["entry", "revision"], name="plans_confirmation_once"),
            # F1: never in the turn that wrote the revision.
            models.CheckConstraint(
                condition=Q(turn_id="") | ~Q(turn_id=F("revision_turn_id")),
                name="plans_confirmation_not_in_the_writing_turn",
            ),
            # D-C18: over the API, a turn the plan first saw after the revision was
            # recorded (or never saw)...
            models.CheckConstraint(
                condition=Q(how="admin")
                | Q(turn_seen_after__isnull=True)
                | Q(turn_seen_after__gte=F("revision_number")),
                name="plans_confirmation_from_a_later_turn",
            ),
            # ...and a revision found on disk is never confirmed by an agent key.
            models.CheckConstraint(
                condition=Q(how="admin") | Q(revision_author_known=True) | Q(by_agent=False),
                name="plans_confirmation_disk_revision_not_by_an_agent",
            ),
            # Over the API the user's message and its turn are required; in the
            # admin, the signed-in person.
            models.CheckConstraint(
                condition=(Q(how="api") & ~Q(message="") & ~Q(turn_id=""))
                | (Q(how="admin") & Q(confirmed_by__isnull=False)),
                name="plans_confirmation_says_who",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.entry} r{self.revision.number} ({self.how})"


class ChangeRequest(models.Model):
    """A person's request to change a revision instead of confirming it (§2.3 step 5)."""

    entry = models.ForeignKey(
        Entry, on_delete=models.CASCADE, related_name="change_requests", verbose_name=_("entry")
    )
    revision = models.ForeignKey(
        Revision, on_delete=models.PROTECT, related_name="+", verbose_name=_("revision")
    )
    how = models.CharField(_("how"), max_length=8, choices=Confirmation.CHANNELS)
    turn_id = models.CharField(_("turn"), max_length=ID_MAX_LENGTH, blank=True)
    comment = models.TextField(_("comment"))
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("requested by"),
    )
    relayed_by = models.CharField(_("relayed by"), max_length=200, blank=True)
    requested_at = models.DateTimeField(_("requested at"), default=timezone.now)

    class Meta:
        verbose_name = _("change request")
        verbose_name_plural = _("change requests")
        ordering = ("-requested_at", "-id")
        constraints = [
            models.CheckConstraint(condition=~Q(comment=""), name="plans_change_request_says_what"),
        ]

    def __str__(self) -> str:
        return f"{self.entry} r{self.revision.number}: {self.comment[:40]}"


class Expiry(models.Model):
    """A revision that waited for its confirmation too long (D-C25), kept for the timeline.

    The entry's own state and `expired_at` say it of the current revision; a new
    revision clears them, this row stays.
    """

    entry = models.ForeignKey(
        Entry, on_delete=models.CASCADE, related_name="expiries", verbose_name=_("entry")
    )
    revision = models.ForeignKey(
        Revision, on_delete=models.PROTECT, related_name="+", verbose_name=_("revision")
    )
    expired_at = models.DateTimeField(_("confirmation expired at"))
    recorded_at = models.DateTimeField(_("recorded at"), default=timezone.now)

    class Meta:
        verbose_name = _("expired revision")
        verbose_name_plural = _("expired revisions")
        ordering = ("-expired_at", "-id")
        constraints = [
            models.UniqueConstraint(fields=["entry", "revision"], name="plans_expiry_once"),
        ]

    def __str__(self) -> str:
        return f"{self.entry} r{self.revision.number} expired"
