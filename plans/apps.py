from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class PlansConfig(AppConfig):
    name = "plans"
    verbose_name = _("Plans")
    default_auto_field = "django.db.models.BigAutoField"
