"""The gateway's state (contract §14): sessions, mappings, task runs, native task records.

The original kept both the mapping and the task runs inside OpenClaw's
session entry as JSON; here they are tables with the constraints the JSON
could not express. The tables keep the names they had when these models lived
in the kernel app (D-K4), so moving the code moved no data.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from xworkmate.lib.jstext import KEY_MAX_LENGTH


class SessionEntry(models.Model):
    """One OpenClaw session (`SessionEntry` of §1.2), created on first use.

    `session_id` and `created_at` are the contract's `fallbackEntry`; like the
    original (`preserveActivity: true`) later writes of the mapping or of runs
    never bump the entry's own activity time.
    """

    session_key = models.CharField(_("session key"), max_length=KEY_MAX_LENGTH, unique=True)
    session_id = models.CharField(_("session id"), max_length=KEY_MAX_LENGTH)
    created_at = models.DateTimeField(_("created at"), default=timezone.now)

    class Meta:
        db_table = "xworkmate_sessionentry"
        verbose_name = _("session")
        verbose_name_plural = _("sessions")
        ordering = ("-created_at",)

    def __str__(self) -> str:
        return self.session_key


class SessionMapping(models.Model):
    """The durable app thread ↔ OpenClaw session mapping (§14.1).

    One per session (the one-to-one key) and one per app thread (unique
    `app_thread_key`): two concurrent prepares that would map one thread to two
    sessions cannot both commit, whatever the interleaving, and the loser gets
    the contract's CONFLICT.
    """

    SOURCES = (("session_start", "session_start"), ("bridge_prepare", "bridge_prepare"))

    session = models.OneToOneField(
        SessionEntry,
        on_delete=models.CASCADE,
        related_name="mapping",
        verbose_name=_("session"),
    )
    app_thread_key = models.CharField(_("app thread key"), max_length=KEY_MAX_LENGTH, unique=True)
    expected_artifact_dirs = models.JSONField(_("expected artifact dirs"), default=list)
    source = models.CharField(_("source"), max_length=16, choices=SOURCES)
    # The wire `createdAt`: the caller's `createdAt` verbatim for a new mapping
    # (the contract stores it as sent), else the time of creation.
    created_at_text = models.CharField(_("createdAt (as sent)"), max_length=64)
    created_at = models.DateTimeField(_("created at"), default=timezone.now)
    updated_at = models.DateTimeField(_("updated at"), default=timezone.now)

    class Meta:
        db_table = "xworkmate_sessionmapping"
        verbose_name = _("session mapping")
        verbose_name_plural = _("session mappings")
        ordering = ("-updated_at",)
        constraints = [
            models.CheckConstraint(
                condition=models.Q(updated_at__gte=models.F("created_at")),
                name="xworkmate_mapping_updated_after_created",
            ),
        ]

    def __str__(self) -> str:
        return self.app_thread_key


class TaskRun(models.Model):
    """One recorded task run of a session (§14.2).

    The gateway sees the newest MAX_RECORDED_TASK_RUNS runs of a session by
    `updated_at`, as the original's bounded store did; older runs are not
    deleted but marked `evicted_at` and kept as history until
    `gateway.run_history_retention` has passed. A run id is unique among the
    visible runs only, so a re-used run id starts a new row and the evicted one
    stays in the history.
    """

    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    STATUSES = ((RUNNING, "running"), (COMPLETED, "completed"), (FAILED, "failed"))

    session = models.ForeignKey(
        SessionEntry, on_delete=models.CASCADE, related_name="runs", verbose_name=_("session")
    )
    run_id = models.CharField(_("run id"), max_length=KEY_MAX_LENGTH)
    status = models.CharField(_("status"), max_length=16, choices=STATUSES)
    success = models.BooleanField(_("success"), default=False)
    started_at = models.DateTimeField(_("started at"))
    updated_at = models.DateTimeField(_("updated at"))
    completed_at = models.DateTimeField(_("completed at"), null=True, blank=True)
    # "" means absent: the contract drops empty output and error (compactObject).
    output = models.TextField(_("output"), blank=True)
    error = models.TextField(_("error (redacted)"), blank=True)
    evicted_at = models.DateTimeField(
        _("moved to history at"),
        null=True,
        blank=True,
        help_text=_("No longer among the session's newest runs the gateway shows."),
    )

    class Meta:
        db_table = "xworkmate_taskrun"
        verbose_name = _("task run")
        verbose_name_plural = _("task runs")
        ordering = ("-updated_at", "-id")
        indexes = [
            models.Index(fields=["session", "-updated_at"], name="xworkmate_run_recent"),
            models.Index(fields=["evicted_at"], name="xworkmate_run_evicted"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["session", "run_id"],
                condition=models.Q(evicted_at__isnull=True),
                name="xworkmate_run_visible_unique",
            ),
            models.CheckConstraint(
                condition=models.Q(updated_at__gte=models.F("started_at")),
                name="xworkmate_run_updated_after_started",
            ),
            # Terminal ⇔ completed_at set, and success only on "completed".
            models.CheckConstraint(
                condition=(
                    models.Q(status="running", completed_at__isnull=True, success=False)
                    | models.Q(status="completed", completed_at__isnull=False, success=True)
                    | models.Q(status="failed", completed_at__isnull=False, success=False)
                ),
                name="xworkmate_run_status_consistent",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.run_id} ({self.status})"


class NativeTask(models.Model):
    """A task-registry record pushed by the platform (the contract's native registry).

    `tasks.get` prefers these over the recorded runs (§13.2 A). `record` is the
    platform's record as sent and is returned as `task`; `status` is kept in
    its own column so the sticky-terminal rule is one conditional UPDATE.
    """

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    COMPLETED = "completed"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"
    LOST = "lost"
    ACTIVE_STATUSES = (QUEUED, RUNNING)
    TERMINAL_STATUSES = (SUCCEEDED, COMPLETED, FAILED, TIMED_OUT, CANCELLED, LOST)
    STATUSES = tuple((s, s) for s in (*ACTIVE_STATUSES, *TERMINAL_STATUSES))

    session_key = models.CharField(_("session key"), max_length=KEY_MAX_LENGTH)
    task_id = models.CharField(_("task id"), max_length=KEY_MAX_LENGTH)
    run_id = models.CharField(_("run id"), max_length=KEY_MAX_LENGTH, blank=True)
    status = models.CharField(_("status"), max_length=16, choices=STATUSES)
    record = models.JSONField(_("record"), default=dict)
    created_at = models.DateTimeField(_("created at"), default=timezone.now)
    updated_at = models.DateTimeField(_("updated at"), default=timezone.now)
    terminal_at = models.DateTimeField(_("terminal at"), null=True, blank=True)

    class Meta:
        db_table = "xworkmate_nativetask"
        verbose_name = _("native task")
        verbose_name_plural = _("native tasks")
        ordering = ("-updated_at", "-id")
        indexes = [
            models.Index(fields=["session_key", "run_id"], name="xworkmate_native_run"),
            models.Index(fields=["session_key", "-updated_at"], name="xworkmate_native_recent"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["session_key", "task_id"], name="xworkmate_native_task_unique"
            ),
            models.CheckConstraint(
                condition=models.Q(updated_at__gte=models.F("created_at")),
                name="xworkmate_native_updated_after_created",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.task_id} ({self.status})"
