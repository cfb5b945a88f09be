"""Tables of the kernel: API keys, periodic job state, admin preferences."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


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


class BeatLease(models.Model):
    """Which beat process may send the periodic jobs (D-K25): one row, held until it expires.

    The holder renews it well before `expires_at`; another beat takes it only
    once it has expired, so a dead holder is replaced within one lease period.
    """

    name = models.CharField(max_length=32, unique=True)
    holder = models.CharField(max_length=200)
    acquired_at = models.DateTimeField()
    renewed_at = models.DateTimeField()
    expires_at = models.DateTimeField()

    class Meta:
        verbose_name = _("beat lease")
        verbose_name_plural = _("beat leases")
        constraints = [
            models.CheckConstraint(
                condition=models.Q(renewed_at__gte=models.F("acquired_at"))
                & models.Q(expires_at__gt=models.F("renewed_at")),
                name="beat_lease_times_in_order",
            )
        ]

    def __str__(self) -> str:
        return f"{self.name}: {self.holder}"
