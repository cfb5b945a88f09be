"""Tables of the project package: API keys, periodic job state, admin preferences,
and the gateway's sessions, mappings, task runs and native task records.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

AREAS = ("gateway", "plans", "longrun")
SCOPES = tuple(f"{area}:{level}" for area in AREAS for level in ("read", "write"))


class ApiKey(models.Model):
    """A bearer key for the bridge or an agent. Only its SHA-256 is stored."""

    name = models.CharField(_("name"), max_length=100, unique=True)
    prefix = models.CharField(
        _("prefix"), max_length=16, help_text=_("First characters of the key, to recognise it.")
    )
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    scopes = models.JSONField(_("scopes"), default=list)
    created_at = models.DateTimeField(_("created at"), default=timezone.now)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("created by"),
    )
    revoked_at = models.DateTimeField(_("revoked at"), null=True, blank=True)
    last_used_at = models.DateTimeField(_("last used at"), null=True, blank=True)
    # An agent key is bound to one task run (§13.0, the host's trusted
    # `sessionScope`): its session and run, and the workspace and task
    # directory when set, override whatever the caller's params say.
    bound_session_key = models.CharField(_("bound session key"), max_length=512, blank=True)
    bound_run_id = models.CharField(_("bound run id"), max_length=512, blank=True)
    bound_workspace_dir = models.CharField(_("bound workspace dir"), max_length=1024, blank=True)
    bound_artifact_scope = models.CharField(_("bound task directory"), max_length=1024, blank=True)

    class Meta:
        verbose_name = _("API key")
        verbose_name_plural = _("API keys")
        ordering = ("name",)
        constraints = [
            # Bound means both: the override applies only with a session and a run.
            models.CheckConstraint(
                condition=models.Q(bound_session_key="", bound_run_id="")
                | (~models.Q(bound_session_key="") & ~models.Q(bound_run_id="")),
                name="xworkmate_apikey_bound_session_and_run",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    @property
    def is_bound(self) -> bool:
        return bool(self.bound_session_key and self.bound_run_id)


class PeriodicJobState(models.Model):
    """What beat and the worker last did for one configured periodic job.

    `beat_seen_at` is written when a beat process starts with the job in its
    schedule; `last_tick_at` each time a worker runs it. /healthz compares
    them with the job's interval.
    """

    name = models.CharField(max_length=64, unique=True)
    task = models.CharField(max_length=200)
    beat_seen_at = models.DateTimeField(null=True, blank=True)
    last_tick_at = models.DateTimeField(null=True, blank=True)
    last_finished_at = models.DateTimeField(null=True, blank=True)
    last_status = models.CharField(max_length=16, blank=True)
    last_error = models.TextField(blank=True)
    runs = models.PositiveBigIntegerField(default=0)
    failures = models.PositiveBigIntegerField(default=0)

    class Meta:
        verbose_name = _("periodic job")
        verbose_name_plural = _("periodic jobs")
        ordering = ("name",)

    def __str__(self) -> str:
        return self.name


class UserPreference(models.Model):
    """Per-user admin settings; today the interface language."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="xworkmate_preference"
    )
    language = models.CharField(max_length=16)

    def __str__(self) -> str:
        return f"{self.user}: {self.language}"


# ---------------------------------------------------------------------------
# The gateway's state (issue 4; contract §14). The original kept both the
# mapping and the task runs inside OpenClaw's session entry as JSON; here they
# are tables with the constraints the JSON could not express.

# Longest key, thread or run id accepted (the services refuse longer ones with
# a message naming the field, so the database never sees them).
KEY_MAX_LENGTH = 512


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
