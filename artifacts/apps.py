from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ArtifactsConfig(AppConfig):
    name = "artifacts"
    verbose_name = _("Artifacts")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from artifacts.gateway_methods import METHODS
        from xworkmate.gateway import register_method

        for method in METHODS:
            register_method(method)
