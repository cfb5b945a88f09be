from __future__ import annotations

import importlib
import importlib.util
from typing import Any

from django.apps import AppConfig
from django.core import checks
from django.utils.translation import gettext_lazy as _


class XworkmateConfig(AppConfig):
    name = "xworkmate"
    verbose_name = _("Gateway and service")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        checks.register(_periodic_job_tasks_exist, checks.Tags.compatibility)
        import xworkmate.schema  # noqa: F401 (registers the API key scheme with drf-spectacular)
        _register_gateway_methods()


def _register_gateway_methods() -> None:
    """The first two methods of the contract's order (§1.4); the artifacts app adds four."""
    from xworkmate import gateway_docs
    from xworkmate.gateway import GatewayMethod, register_method
    from xworkmate.sessions import session_prepare_method, tasks_get_method

    register_method(
        GatewayMethod(
            "xworkmate.session.prepare",
            session_prepare_method,
            "gateway:write",
            "Map an app thread to an OpenClaw session and prepare the run's artifact scope",
            description=(
                "Records the durable appThreadKey ↔ openclawSessionKey mapping, creates "
                "`tasks/<session>/<run>` and marks the run running. Everything is checked "
                "before anything is written; a thread or session already mapped elsewhere "
                "is CONFLICT."
            ),
            params_doc=gateway_docs.SESSION_PREPARE,
        )
    )
    register_method(
        GatewayMethod(
            "xworkmate.tasks.get",
            tasks_get_method,
            "gateway:read",
            "Task status, output and the current artifact manifest of one run",
            description=(
                "Looks the session up by openclawSessionKey or appThreadKey; answers the "
                "native task, else the recorded run, else artifact evidence. Lookup "
                "failures are successful payloads with `ok: false` and a `code`."
            ),
            params_doc=gateway_docs.TASKS_GET,
        )
    )


def _periodic_job_tasks_exist(app_configs: Any, **_: Any) -> list[checks.CheckMessage]:
    """Every configured periodic job must name a task some app defines."""
    from django.apps import apps
    from django.conf import settings

    from xworkmate.celery import app

    # Import each app's tasks module directly: asking Celery to autodiscover
    # here would re-enter this check through Celery's Django fix-up.
    for config in apps.get_app_configs():
        if importlib.util.find_spec(f"{config.name}.tasks") is not None:
            importlib.import_module(f"{config.name}.tasks")
    errors: list[checks.CheckMessage] = []
    for job in settings.XWORKMATE.periodic_jobs:
        if job.task not in app.tasks:
            errors.append(
                checks.Error(
                    f"periodic_jobs[{job.name}].task: no Celery task named {job.task!r}",
                    hint="Use a task name defined by an xworkmate app, or remove the job.",
                    id="xworkmate.E001",
                )
            )
    return errors
