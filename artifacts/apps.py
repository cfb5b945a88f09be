from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ArtifactsConfig(AppConfig):
    name = "artifacts"
    verbose_name = _("Artifacts")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The four artifact methods, after the gateway app's two (§1.4: the
        # contract's order; INSTALLED_APPS lists the gateway app first).
        from artifacts import hosted
        from artifacts.methods import METHODS
        from xworkmate.methods import register_method

        for method in METHODS:
            register_method(method)
        hosted.register()
