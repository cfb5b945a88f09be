from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.apps import AppConfig
from django.core import checks
from django.utils.translation import gettext_lazy as _


class XworkmateConfig(AppConfig):
    """The kernel. It knows no app: the apps plug into it from their own ready() (D-K1)."""

    name = "xworkmate"
    verbose_name = _("Service")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The Celery app must exist before any app's @shared_task binds to it.
        import xworkmate.celery
        import xworkmate.schema  # noqa: F401 (registers the API key scheme with drf-spectacular)
        from xworkmate.cards import AdminCard, register_admin_card
        from xworkmate.config import PeriodicJob
        from xworkmate.periodic import register_default_job

        checks.register(_periodic_jobs_are_valid, checks.Tags.compatibility)
        register_default_job(
            PeriodicJob("liveness", "xworkmate.liveness", timedelta(seconds=30), None, True)
        )
        for card in (
            AdminCard(
                "healthz",
                _("Health"),
                _("Database, broker and periodic jobs (JSON, 503 when something is down)"),
            ),
            AdminCard(
                "api-docs",
                _("API documentation"),
                _("Gateway methods and REST endpoints (OpenAPI)"),
            ),
            AdminCard(
                "admin:xworkmate_apikey_changelist",
                _("API keys"),
                _("Keys for the bridge and agents, with scopes"),
            ),
            AdminCard(
                "admin:xworkmate_periodicjobstate_changelist",
                _("Periodic jobs"),
                _("What beat runs, and when each job last ticked"),
            ),
        ):
            register_admin_card(card)


def _periodic_jobs_are_valid(app_configs: Any, **_: Any) -> list[checks.CheckMessage]:
    from django.conf import settings

    from xworkmate.periodic import periodic_job_problems

    return [
        checks.Error(
            problem,
            hint="Use a task name defined by an xworkmate app, or remove the job.",
            id="xworkmate.E001",
        )
        for problem in periodic_job_problems(settings.XWORKMATE)
    ]
