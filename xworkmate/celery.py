"""The Celery application: broker and beat schedule come from the config."""

from __future__ import annotations

import os
from typing import Any

from celery import Celery
from celery.signals import beat_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "xworkmate.settings")

app = Celery("xworkmate")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@beat_init.connect
def _beat_started(**_: Any) -> None:
    """Record which jobs this beat schedules, so /healthz can tell "not yet" from "never"."""
    import django

    django.setup()
    from django.conf import settings
    from django.utils import timezone

    from xworkmate.services import periodic_jobs_mark_seen

    jobs = [job for job in settings.XWORKMATE.periodic_jobs if job.enabled]
    periodic_jobs_mark_seen(jobs=jobs, now=timezone.now())
