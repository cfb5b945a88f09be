from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class LongrunConfig(AppConfig):
    name = "longrun"
    verbose_name = _("Long-run mode")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from longrun import services
        from xworkmate.delivery.services import register_outcome_handler

        # The task's bookkeeping follows the channel's real answer, in the
        # transaction that records it (D-B10).
        register_outcome_handler(services.PROGRESS_PURPOSE, services.progress_answer_record)
        register_outcome_handler(services.RESUME_PURPOSE, services.resume_answer_record)
        register_outcome_handler(services.RECOVERY_PURPOSE, services.recovery_answer_record)
