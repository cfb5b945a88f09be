from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class PlansConfig(AppConfig):
    name = "plans"
    verbose_name = _("Plans")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from xworkmate.cards import AdminCard, register_admin_card

        register_admin_card(
            AdminCard(
                "plans-schedule-preview",
                _("Schedule preview"),
                _("What a cron, every or at schedule means, and when it fires"),
            )
        )
