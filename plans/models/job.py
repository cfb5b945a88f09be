"""A confirmed entry's job (OpenClaw's CronJob, §8.1) and its runs (§8.5)."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from plans.models._common import (
    ID_MAX_LENGTH,
    MISSED_POLICIES,
    OVERLAP_POLICIES,
    SHA256_LENGTH,
)
from plans.models.gate import Confirmation
from plans.models.plan import Entry, Revision
from plans.runpolicy import MISSED_RUN_LATEST, OVERLAP_SKIP
from xworkmate.lib.jstext import KEY_MAX_LENGTH


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
    # The run policies of the confirmed revision (D-C23, D-C24), copied from its entry.
    max_lateness_seconds = models.PositiveIntegerField(
        _("maximum lateness (s)"), null=True, blank=True
    )
    overlap = models.CharField(
        _("overlapping fire times"), max_length=16, choices=OVERLAP_POLICIES,
        default=OVERLAP_SKIP,
    )
    # Fire times that wait to run once no run is out, oldest first: run-all's catch-up
    # (D-C23) and the one an overlap buffer keeps (D-C24).
    waiting_fire_ms = models.JSONField(_("catch-up fire times waiting"), default=list, blank=True)
    buffered_fire_ms = models.BigIntegerField(_("buffered fire time"), null=True, blank=True)
    # A cancelled job, or a one-shot that succeeded, leaves the schedule but keeps
    # its row and runs (OpenClaw deletes it; its history is worth more here).
    removed_at = models.DateTimeField(_("removed at"), null=True, blank=True)
    # When the job's current pause began (D-C26): the fire times from then on get their
    # skipped rows when it is resumed or cancelled. None: not paused by anyone.
    paused_at = models.DateTimeField(_("paused since"), null=True, blank=True)
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
            # D-C26: a pause is a disabled job; a resume clears both together.
            models.CheckConstraint(
                condition=Q(paused_at__isnull=True) | Q(enabled=False),
                name="plans_job_paused_is_disabled",
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
    # D-C25: the SHA-256 of the entry's text in PLAN.md on disk when the run started
    # (blank: not read), and why the run carried the confirmed text instead, when it did.
    plan_text_sha256 = models.CharField(
        _("PLAN.md entry SHA-256 at start"), max_length=SHA256_LENGTH, blank=True
    )
    plan_text_note = models.TextField(_("PLAN.md text check"), blank=True)
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
