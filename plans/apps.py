from __future__ import annotations

from datetime import timedelta

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class PlansConfig(AppConfig):
    name = "plans"
    verbose_name = _("Plans")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from plans import files
        from plans.metrics import PlansCollector
        from plans.services import RUN_PURPOSE, run_record_delivery
        from xworkmate.cards import AdminCard, register_admin_card
        from xworkmate.config import PeriodicJob
        from xworkmate.delivery.services import register_outcome_handler
        from xworkmate.metrics import register_collector
        from xworkmate.periodic import register_default_job

        files.register()  # PLAN.md and run outputs, on the workspace's host (D-K31)
        register_admin_card(
            AdminCard(
                "admin:plans_entry_changelist",
                _("Plans"),
                _("Review PLAN.md revisions, confirm them, and watch their runs"),
            )
        )
        register_admin_card(
            AdminCard(
                "plans-schedule-preview",
                _("Schedule preview"),
                _("What a cron, every or at schedule means, and when it fires"),
            )
        )
        # The scheduler's lag on /metrics, read at each scrape (D-K26).
        register_collector(PlansCollector())
        # A run's status follows what the channel confirmed (its own issue's rule).
        register_outcome_handler(RUN_PURPOSE, run_record_delivery)
        # D-C1: one tick, at most every 30 s, for every plan.
        register_default_job(
            PeriodicJob("plans-tick", "plans.tick", timedelta(seconds=15), None, True)
        )
        register_default_job(
            PeriodicJob("plans-reconcile", "plans.reconcile", timedelta(minutes=5), None, True)
        )
