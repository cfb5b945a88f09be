from __future__ import annotations

from datetime import timedelta

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class LongrunConfig(AppConfig):
    name = "longrun"
    verbose_name = _("Long-run mode")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from longrun import services
        from longrun.metrics import LongrunCollector
        from xworkmate.cards import AdminCard, register_admin_card
        from xworkmate.config import PeriodicJob
        from xworkmate.delivery.outcomes import register_outcome_handler
        from xworkmate.metrics import register_collector
        from xworkmate.periodic import register_default_job

        register_admin_card(
            AdminCard(
                "admin:longrun_longtask_changelist",
                _("Long tasks"),
                _("The live board: overdue tasks first, visible progress, failed deliveries"),
            )
        )
        # Tasks by state and the monitors' due items on /metrics (D-K26).
        register_collector(LongrunCollector())
        # The task's bookkeeping follows the channel's real answer, in the
        # transaction that records it (D-B10).
        register_outcome_handler(services.PROGRESS_PURPOSE, services.progress_outcome_record)
        register_outcome_handler(services.RESUME_PURPOSE, services.resume_outcome_record)
        register_outcome_handler(services.RECOVERY_PURPOSE, services.recovery_outcome_record)
        # The monitors on beat (D-B20): one job per monitor, never one per
        # task. The foreground heartbeat and the keepalive at the original's
        # 60 s, the watchdog at its cron example's 5 minutes.
        for name, task, every in (
            ("longrun-foreground", "longrun.foreground_due", timedelta(seconds=60)),
            ("longrun-keepalive", "longrun.keepalive", timedelta(seconds=60)),
            ("longrun-watchdog", "longrun.watchdog", timedelta(minutes=5)),
            ("longrun-cleanup", "longrun.cleanup", timedelta(days=1)),
        ):
            register_default_job(PeriodicJob(name, task, every, None, True))
