from __future__ import annotations

from datetime import timedelta

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class DeliveryConfig(AppConfig):
    """The outbox, part of the kernel (D-K1): it imports no app; apps call its services."""

    name = "xworkmate.delivery"
    label = "delivery"
    verbose_name = _("Delivery")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from xworkmate.cards import AdminCard, register_admin_card
        from xworkmate.config import PeriodicJob
        from xworkmate.periodic import register_default_job

        register_admin_card(
            AdminCard(
                "admin:delivery_message_changelist",
                _("Outbox"),
                _("Every message the service sends, and whether it really arrived"),
            )
        )
        register_default_job(
            PeriodicJob(
                "delivery-dispatch",
                "xworkmate.delivery.dispatch",
                timedelta(seconds=10),
                None,
                True,
            )
        )
