"""A PLAN.md, its revisions, its entries (one per Task_ID) and the turns it has seen."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from plans.models._common import ID_MAX_LENGTH, MISSED_POLICIES, OVERLAP_POLICIES, SHA256_LENGTH
from plans.runpolicy import MISSED_RUN_LATEST, OVERLAP_SKIP
from xworkmate.lib.jstext import KEY_MAX_LENGTH


class Plan(models.Model):
    """One PLAN.md: `archives/<archive_id>/PLAN.md` in an agent's workspace."""

    archive_id = models.CharField(_("ARCHIVE_ID"), max_length=ID_MAX_LENGTH, unique=True)
    agent_id = models.CharField(_("agent"), max_length=ID_MAX_LENGTH)
    # The conversation that created the plan; an agent key only sees its own.
    session_key = models.CharField(_("session key"), max_length=KEY_MAX_LENGTH, db_index=True)
    # Why the PLAN.md on disk is not applied (reconciliation): the line and the
    # rule. Empty when the file and the last revision agree or the file is valid.
    problem = models.TextField(_("problem on disk"), blank=True)
    created_at = models.DateTimeField(_("created at"), default=timezone.now)
    updated_at = models.DateTimeField(_("updated at"), default=timezone.now)

    class Meta:
        # "PLAN.md file", not "plan": next to "plan entries" in the admin, "plans"
        # read as the same thing (issue 22); one PLAN.md holds many entries.
        verbose_name = _("PLAN.md file")
        verbose_name_plural = _("PLAN.md files")
        ordering = ("-updated_at", "-id")

    def __str__(self) -> str:
        return f"archives/{self.archive_id}/PLAN.md"


class Revision(models.Model):
    """One content of a PLAN.md, as written (by the API) or found (by reconciliation)."""

    API = "api"
    FILE = "file"
    SOURCES = ((API, _("written over the API")), (FILE, _("found on disk")))

    plan = models.ForeignKey(
        Plan, on_delete=models.CASCADE, related_name="revisions", verbose_name=_("plan")
    )
    number = models.PositiveIntegerField(_("revision"))
    content = models.TextField(_("PLAN.md"))
    sha256 = models.CharField(_("SHA-256"), max_length=SHA256_LENGTH)
    source = models.CharField(_("source"), max_length=8, choices=SOURCES)
    # The conversation turn that wrote it (e.g. the bridge's run id); empty when
    # found on disk. A confirmation must come from another turn.
    turn_id = models.CharField(_("turn"), max_length=ID_MAX_LENGTH, blank=True)
    written_by = models.CharField(_("written by"), max_length=200, blank=True)
    written_at = models.DateTimeField(_("written at"), default=timezone.now)

    class Meta:
        verbose_name = _("PLAN.md revision")
        verbose_name_plural = _("PLAN.md revisions")
        ordering = ("plan", "number")
        constraints = [
            models.UniqueConstraint(fields=["plan", "number"], name="plans_revision_once"),
            models.CheckConstraint(condition=Q(number__gte=1), name="plans_revision_from_one"),
        ]

    def __str__(self) -> str:
        return f"{self.plan} r{self.number}"


class Entry(models.Model):
    """One Task_ID of a PLAN.md, with the protocol state of §2.3."""

    CLARIFYING = "CLARIFYING"
    ORA_PROPOSED = "ORA_PROPOSED"
    AWAITING = "AWAITING_PLAN_CONFIRMATION"
    REVISING = "REVISING"
    CONFIRMED = "CONFIRMED"
    SCHEDULED = "SCHEDULED"
    CHANGE_REQUESTED = "CHANGE_REQUESTED"
    BLOCKED = "BLOCKED"
    PAUSED = "PAUSED"
    REMOVED = "REMOVED"
    # D-C25: the current revision awaited confirmation longer than plans.confirmation_expiry.
    EXPIRED = "EXPIRED"
    STATES = (
        (CLARIFYING, _("clarifying")),
        (ORA_PROPOSED, _("ORA proposed")),
        (AWAITING, _("awaiting confirmation")),
        (REVISING, _("revising")),
        (CONFIRMED, _("confirmed")),
        (SCHEDULED, _("scheduled")),
        (CHANGE_REQUESTED, _("change requested")),
        (BLOCKED, _("blocked")),
        (PAUSED, _("paused")),
        (REMOVED, _("removed")),
        (EXPIRED, _("confirmation expired")),
    )

    task_id = models.UUIDField(_("Task_ID"), unique=True)
    plan = models.ForeignKey(
        Plan, on_delete=models.CASCADE, related_name="entries", verbose_name=_("plan")
    )
    task_name = models.CharField(_("name"), max_length=500)
    state = models.CharField(_("state"), max_length=32, choices=STATES, default=AWAITING)
    # The newest revision that changed this entry, and the one a person confirmed
    # (the job runs that one until a newer one is confirmed, D-C3).
    revision = models.ForeignKey(
        Revision, on_delete=models.PROTECT, related_name="+", verbose_name=_("revision")
    )
    confirmed_revision = models.ForeignKey(
        Revision,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("confirmed revision"),
    )
    # What a confirmation would schedule (the job's schedule and message), proposed
    # with the revision; None for an entry found on disk that nobody proposed a
    # schedule for yet.
    schedule = models.JSONField(_("proposed schedule"), null=True, blank=True)
    message = models.TextField(_("proposed message"), blank=True)
    missed = models.CharField(
        _("missed fire times"), max_length=16, choices=MISSED_POLICIES, default=MISSED_RUN_LATEST
    )
    # run-all's maximum lateness in seconds (D-C23); None for the other policies.
    max_lateness_seconds = models.PositiveIntegerField(
        _("maximum lateness (s)"), null=True, blank=True
    )
    overlap = models.CharField(
        _("overlapping fire times"), max_length=16, choices=OVERLAP_POLICIES,
        default=OVERLAP_SKIP,
    )
    # The job payload's timeoutSeconds as proposed (§8.5); None: the 60-minute default.
    timeout_seconds = models.PositiveIntegerField(_("timeoutSeconds"), null=True, blank=True)
    # Why it is blocked (archive-protocol's ARCHIVE_REASON), when it is.
    blocked_reason = models.TextField(_("blocked because"), blank=True)
    # When its current revision's wait for a confirmation ran out (D-C25): the revision's
    # written_at plus plans.confirmation_expiry. Cleared by a new revision.
    expired_at = models.DateTimeField(_("confirmation expired at"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), default=timezone.now)
    updated_at = models.DateTimeField(_("updated at"), default=timezone.now)

    class Meta:
        verbose_name = _("plan entry")
        verbose_name_plural = _("plan entries")
        ordering = ("plan", "created_at", "id")
        constraints = [
            models.CheckConstraint(
                condition=~Q(state="BLOCKED") | ~Q(blocked_reason=""),
                name="plans_entry_blocked_has_reason",
            ),
            models.CheckConstraint(
                condition=~Q(state="EXPIRED") | Q(expired_at__isnull=False),
                name="plans_entry_expired_says_when",
            ),
        ]

    def __str__(self) -> str:
        return f"[{self.task_id}] {self.task_name}"


class Turn(models.Model):
    """A conversation turn this plan has seen, and after which revision (D-C18).

    A turn may confirm only revisions recorded before it first appeared: its
    `seen_after` is the number of the plan's newest revision at that moment,
    not counting the revision it wrote itself. A writer of revision n has
    `seen_after` n-1, so it can never confirm n or anything later; a turn that
    confirmed or asked to change revision n has n, so a revise to n+1 leaves it
    unable to confirm again. A call whose turn noticed an edit on disk is
    presumed to be its writer (agents can write their workspace).
    """

    PROPOSER = "proposer"
    WRITER = "writer"
    DISK_WRITER = "disk-writer"
    CONFIRMER = "confirmer"
    CHANGE_REQUESTER = "change-requester"
    ROLES = (
        (PROPOSER, _("proposer")),
        (WRITER, _("writer")),
        (DISK_WRITER, _("presumed writer of an edit on disk")),
        (CONFIRMER, _("confirmer")),
        (CHANGE_REQUESTER, _("change requester")),
    )

    plan = models.ForeignKey(
        Plan, on_delete=models.CASCADE, related_name="turns", verbose_name=_("plan")
    )
    turn_id = models.CharField(_("turn"), max_length=ID_MAX_LENGTH)
    role = models.CharField(_("first seen as"), max_length=20, choices=ROLES)
    revision_number = models.PositiveIntegerField(_("of revision"))
    seen_after = models.PositiveIntegerField(_("first seen after revision"))
    seen_at = models.DateTimeField(_("first seen at"), default=timezone.now)

    class Meta:
        verbose_name = _("turn")
        verbose_name_plural = _("turns")
        ordering = ("plan", "seen_after", "id")
        constraints = [
            models.UniqueConstraint(fields=["plan", "turn_id"], name="plans_turn_once"),
            models.CheckConstraint(condition=~Q(turn_id=""), name="plans_turn_named"),
        ]

    def __str__(self) -> str:
        return f"{self.plan} {self.turn_id} ({self.role} of r{self.revision_number})"
