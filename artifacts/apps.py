from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ArtifactsConfig(AppConfig):
    name = "artifacts"
    verbose_name = _("Artifacts")
    default_auto_field = "django.db.models.BigAutoField"
