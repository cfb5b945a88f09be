from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class LongrunConfig(AppConfig):
    name = "longrun"
    verbose_name = _("Long-run mode")
    default_auto_field = "django.db.models.BigAutoField"
