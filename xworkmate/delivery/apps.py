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
        from xworkmate.cards import AdminCard, register_admin_card, register_admin_notices
        from xworkmate.config import PeriodicJob
        from xworkmate.periodic import register_default_job

        register_admin_card(
            AdminCard(
                "admin:delivery_message_changelist",
                _("Outbox"),
                _("Every message the service sends, and whether it really arrived"),
            )
        )
        register_admin_card(
            AdminCard(
                "admin:delivery_breaker_changelist",
                _("Channel circuit breakers"),
                _("Which channels stopped taking sends, where their messages go, the probes"),
            )
        )
        from xworkmate.delivery.selectors import breaker_notices

        # D-K33: an open breaker is told on the landing page, above the cards.
        register_admin_notices("delivery.breakers", breaker_notices)
        register_default_job(
            PeriodicJob(
                "delivery-dispatch",
                "xworkmate.delivery.dispatch",
                timedelta(seconds=10),
                None,
                True,
            )
        )
