from __future__ import annotations

from datetime import timedelta

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class GatewayConfig(AppConfig):
    name = "gateway"
    label = "gateway"
    verbose_name = _("Gateway")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from gateway.methods import METHODS
        from gateway.methods.prepare import PREPARE_OPERATION, session_prepare_here
        from xworkmate.config import PeriodicJob
        from xworkmate.hostfiles import register_file_operation
        from xworkmate.methods import register_method
        from xworkmate.periodic import register_default_job

        for method in METHODS:
            register_method(method)
        # session.prepare makes the run's scope directory on the workspace's host (D-K31).
        register_file_operation(PREPARE_OPERATION, session_prepare_here)
        # Off unless the config turns it on: each session's own writes already
        # purge its history; this sweeps sessions that are no longer written.
        register_default_job(
            PeriodicJob(
                "task-run-history-purge",
                "xworkmate.purge_task_run_history",
                timedelta(hours=1),
                None,
                False,
            )
        )
