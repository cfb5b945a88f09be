"""Turn the configured periodic jobs into Celery beat's schedule.

Beat never calls an app's task directly: every entry runs
`xworkmate.run_periodic_job(<job name>)`, which looks the job up in the
config, runs its task in the worker and records the tick. So the health page
knows each job's last tick, and a job removed from the config stops running
even if a stale beat schedule still names it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from xworkmate.config import PeriodicJob
from xworkmate.lib.beat_cron import beat_crontab

RUNNER_TASK = "xworkmate.run_periodic_job"


def beat_schedule(jobs: Iterable[PeriodicJob]) -> dict[str, dict[str, Any]]:
    schedule: dict[str, dict[str, Any]] = {}
    for job in jobs:
        if not job.enabled:
            continue
        if job.every is not None:
            when: Any = job.every
            # A tick nobody picked up within one interval is superseded by the next.
            expires = job.every.total_seconds()
        else:
            if job.cron is None:
                raise ValueError(f"periodic job {job.name!r} has neither every nor cron")
            when = beat_crontab(job.cron)
            expires = None
        entry: dict[str, Any] = {"task": RUNNER_TASK, "schedule": when, "args": (job.name,)}
        if expires:
            entry["options"] = {"expires": expires}
        schedule[job.name] = entry
    return schedule
