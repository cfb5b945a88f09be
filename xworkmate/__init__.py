"""xworkmate: the project package (settings, config, API auth, health) and the gateway app."""

from xworkmate.celery import app as celery_app

__all__ = ("celery_app",)
