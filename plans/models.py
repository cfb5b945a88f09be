"""The plans app's tables: plans, PLAN.md revisions, entries, confirmations, jobs, runs.

The gate of the schedule-plan protocol is in the tables too, not only in the
services (D-C3, D-C5): a job cannot exist without the confirmation of the exact
PLAN.md revision it runs (a required foreign key), and a confirmation cannot
come from the turn that wrote its revision (a check constraint on the turn ids
it copies; D-C13). Job fields keep OpenClaw's cron model (§8.1) in snake
case; the API speaks the JSON names.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from xworkmate.lib.wire import KEY_MAX_LENGTH

SHA256_LENGTH = 64

# What the scheduler does with fire times missed while it was down (D-C10).
MISSED_RUN_LATEST = "run-latest"
MISSED_SKIP = "skip"
MISSED_POLICIES = (
    (MISSED_RUN_LATEST, _("run the newest missed fire time once")),
    (MISSED_SKIP, _("skip and record")),
)
# UUIDs, ARCHIVE_IDs, job ids and turn ids: generous, bounded.
ID_MAX_LENGTH = 200


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
        verbose_name = _("plan")
        verbose_name_plural = _("plans")
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
    # Why it is blocked (archive-protocol's ARCHIVE_REASON), when it is.
    blocked_reason = models.TextField(_("blocked because"), blank=True)
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
        ]

    def __str__(self) -> str:
        return f"[{self.task_id}] {self.task_name}"


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


class Job(models.Model):
    """The schedule of a confirmed entry: OpenClaw's CronJob (§8.1) with its state.

    `confirmation` is required: no job without a person's confirmation of the
    revision it runs (D-C3). A new confirmed revision moves the job to it.
    """

    job_id = models.CharField(_("job id"), max_length=ID_MAX_LENGTH, unique=True)
    entry = models.OneToOneField(
        Entry, on_delete=models.CASCADE, related_name="job", verbose_name=_("entry")
    )
    confirmation = models.ForeignKey(
        Confirmation, on_delete=models.PROTECT, related_name="+", verbose_name=_("confirmation")
    )
    agent_id = models.CharField(_("agentId"), max_length=ID_MAX_LENGTH, blank=True)
    session_key = models.CharField(_("sessionKey"), max_length=KEY_MAX_LENGTH, blank=True)
    name = models.CharField(_("name"), max_length=500)
    description = models.TextField(_("description"), blank=True)
    enabled = models.BooleanField(_("enabled"), default=True)
    delete_after_run = models.BooleanField(_("deleteAfterRun"), default=False)
    created_at_ms = models.BigIntegerField(_("createdAtMs"))
    updated_at_ms = models.BigIntegerField(_("updatedAtMs"))
    schedule = models.JSONField(_("schedule"))
    session_target = models.CharField(_("sessionTarget"), max_length=16, default="isolated")
    wake_mode = models.CharField(_("wakeMode"), max_length=16, default="now")
    payload = models.JSONField(_("payload"))
    delivery = models.JSONField(_("delivery"), null=True, blank=True)
    missed = models.CharField(
        _("missed fire times"), max_length=16, choices=MISSED_POLICIES, default=MISSED_RUN_LATEST
    )
    # A cancelled job, or a one-shot that succeeded, leaves the schedule but keeps
    # its row and runs (OpenClaw deletes it; its history is worth more here).
    removed_at = models.DateTimeField(_("removed at"), null=True, blank=True)
    # state (CronJobState): next_run_at is the scheduler's index (D-C1).
    next_run_at = models.DateTimeField(_("next run"), null=True, blank=True)
    running_at_ms = models.BigIntegerField(_("runningAtMs"), null=True, blank=True)
    last_run_at_ms = models.BigIntegerField(_("lastRunAtMs"), null=True, blank=True)
    last_run_status = models.CharField(_("lastRunStatus"), max_length=16, blank=True)
    last_error = models.TextField(_("lastError"), blank=True)
    last_duration_ms = models.BigIntegerField(_("lastDurationMs"), null=True, blank=True)
    consecutive_errors = models.PositiveIntegerField(_("consecutiveErrors"), default=0)
    schedule_error_count = models.PositiveIntegerField(_("scheduleErrorCount"), default=0)
    last_delivery_status = models.CharField(_("lastDeliveryStatus"), max_length=16, blank=True)
    last_delivery_error = models.TextField(_("lastDeliveryError"), blank=True)
    last_delivered = models.BooleanField(_("lastDelivered"), null=True, blank=True)

    class Meta:
        verbose_name = _("schedule job")
        verbose_name_plural = _("schedule jobs")
        ordering = ("next_run_at", "id")
        indexes = [
            # The tick's question: which enabled jobs are due? (D-C1)
            models.Index(
                fields=["next_run_at"],
                condition=Q(enabled=True, next_run_at__isnull=False),
                name="plans_job_due",
            ),
        ]
        constraints = [
            # D-C7, also in the table.
            models.CheckConstraint(
                condition=Q(session_target="isolated"), name="plans_job_isolated"
            ),
            models.CheckConstraint(
                condition=Q(payload__kind="agentTurn"), name="plans_job_agent_turn"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.job_id})"


class Run(models.Model):
    """One fire time of a job: the run-log line of §8.5, and its delivery's outcome.

    (job, fire_at_ms) is unique: two ticks or two workers never run one fire time
    twice; a fire time missed while the service was down is a `missed` row.
    """

    OK = "ok"
    ERROR = "error"
    SKIPPED = "skipped"
    MISSED = "missed"
    RUNNING = "running"
    STATUSES = (
        (RUNNING, _("running")),
        (OK, _("ok")),
        (ERROR, _("error")),
        (SKIPPED, _("skipped")),
        (MISSED, _("missed")),
    )

    job = models.ForeignKey(
        Job, on_delete=models.CASCADE, related_name="runs", verbose_name=_("job")
    )
    fire_at_ms = models.BigIntegerField(_("fire time (ms)"))
    run_id = models.CharField(_("run id"), max_length=ID_MAX_LENGTH, unique=True)
    revision = models.ForeignKey(
        Revision, on_delete=models.PROTECT, related_name="+", verbose_name=_("revision run")
    )
    forced = models.BooleanField(_("run now"), default=False)
    status = models.CharField(_("status"), max_length=16, choices=STATUSES, default=RUNNING)
    error = models.TextField(_("error"), blank=True)
    summary = models.TextField(_("summary"), blank=True)
    run_at_ms = models.BigIntegerField(_("runAtMs"), null=True, blank=True)
    duration_ms = models.BigIntegerField(_("durationMs"), null=True, blank=True)
    next_run_at_ms = models.BigIntegerField(_("nextRunAtMs"), null=True, blank=True)
    session_id = models.CharField(_("sessionId"), max_length=ID_MAX_LENGTH, blank=True)
    session_key = models.CharField(_("sessionKey"), max_length=KEY_MAX_LENGTH, blank=True)
    # The outbox message that carried the agentTurn, and what its channel confirmed.
    delivery_message_id = models.BigIntegerField(_("outbox message"), null=True, blank=True)
    delivered = models.BooleanField(_("delivered"), null=True, blank=True)
    delivery_status = models.CharField(_("deliveryStatus"), max_length=16, blank=True)
    delivery_error = models.TextField(_("deliveryError"), blank=True)
    # Where the run's outputs are archived: archives/<ARCHIVE_ID>/<TIMESTAMP>/ (D-C6).
    archive_timestamp = models.CharField(_("archive TIMESTAMP"), max_length=19, blank=True)
    created_at = models.DateTimeField(_("created at"), default=timezone.now)
    finished_at = models.DateTimeField(_("finished at"), null=True, blank=True)

    class Meta:
        verbose_name = _("run")
        verbose_name_plural = pgettext_lazy("plan runs", "runs")
        ordering = ("-fire_at_ms", "-id")
        constraints = [
            models.UniqueConstraint(
                fields=["job", "fire_at_ms"], name="plans_run_once_per_fire_time"
            ),
            models.CheckConstraint(
                condition=Q(status="running", finished_at__isnull=True)
                | (~Q(status="running") & Q(finished_at__isnull=False)),
                name="plans_run_finished_consistent",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.job} @ {self.fire_at_ms} ({self.status})"
