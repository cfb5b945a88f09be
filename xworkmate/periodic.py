"""Periodic jobs: the apps' defaults, the config's overrides, and Celery beat's schedule.

Each app declares its default jobs in its AppConfig.ready() with
`register_default_job`; the config file overrides or adds jobs by name
(`[[periodic_jobs]]`); `configured_jobs` merges the two (D-K5). Nothing here
names an app's job: the kernel registers only its own `liveness`.

Beat sends every job through one runner, `xworkmate.run_periodic_job(<name>)`,
which looks the job up in the config of the worker that runs it and enqueues
the job's own task, tagged with the job's name in a message header; the
worker records each tick (start, end, outcome) from Celery's task signals
(xworkmate.tasks). So the job's task keeps its own options (time limit, acks,
routing), the health page knows each job's last tick, and a job removed from
the config stops running even if a stale beat schedule still names it.

`job_health` classifies a job from its last tick and when beat fires it next
(pure: callers pass `now`); it computes with Celery's crontab, so it lives
here, not among the framework-free policies.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import socket
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from celery.beat import PersistentScheduler
from celery.signals import beat_init

from xworkmate.beat_cron import beat_crontab
from xworkmate.config import Config, ConfigError, PeriodicJob, merge_jobs

logger = logging.getLogger(__name__)

RUNNER_TASK = "xworkmate.run_periodic_job"
# The message header that marks a task run as a tick of a periodic job.
JOB_HEADER = "xworkmate_periodic_job"

_DEFAULTS: dict[str, PeriodicJob] = {}


def register_default_job(job: PeriodicJob) -> PeriodicJob:
    """Declare a job beat runs unless the config changes it (call from AppConfig.ready())."""
    if job.name in _DEFAULTS and _DEFAULTS[job.name] != job:
        raise ValueError(f"periodic job {job.name!r} is already registered by another app")
    _DEFAULTS[job.name] = job
    return job


def default_jobs() -> tuple[PeriodicJob, ...]:
    """The registered defaults, in registration order (INSTALLED_APPS order)."""
    return tuple(_DEFAULTS.values())


def configured_jobs(config: Config | None = None) -> tuple[PeriodicJob, ...]:
    """The jobs of `config` (default: the running one) merged with the apps' defaults.

    Raises xworkmate.config.ConfigError when an entry of the file leaves a job
    without a task or a schedule.
    """
    if config is None:
        from django.conf import settings

        config = settings.XWORKMATE
    return merge_jobs(default_jobs(), config.job_entries, source=config.source)


def find_job(name: str, config: Config | None = None) -> PeriodicJob | None:
    return next((job for job in configured_jobs(config) if job.name == name), None)


def periodic_job_problems(config: Config) -> list[str]:
    """Every problem of `config`'s periodic jobs, one line each (empty when they are fine).

    A job must merge cleanly with the apps' defaults and name a task some app
    defines; `manage.py check` (so `make run`) and `config --check` refuse to
    go on otherwise.
    """
    from xworkmate.celery import app

    try:
        jobs = configured_jobs(config)
    except ConfigError as exc:
        return list(exc.problems)
    _import_task_modules()
    return [
        f"periodic_jobs[{job.name}].task: no Celery task named {job.task!r}"
        for job in jobs
        if job.task not in app.tasks
    ]


def _import_task_modules() -> None:
    # Import each app's tasks module directly: asking Celery to autodiscover
    # here would re-enter the checks through Celery's Django fix-up.
    from django.apps import apps

    for config in apps.get_app_configs():
        if importlib.util.find_spec(f"{config.name}.tasks") is not None:
            importlib.import_module(f"{config.name}.tasks")


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


# --- health: is a job ticking as beat fires it ------------------------------------------


JobStatus = Literal["ok", "pending", "stale", "failing", "unscheduled", "disabled"]


@dataclass(frozen=True)
class JobHealth:
    status: JobStatus
    due_by: datetime | None  # the tick must have happened by then, or the job is stale

    @property
    def is_down(self) -> bool:
        return self.status in ("stale", "unscheduled")


def next_fire_after(job: PeriodicJob, moment: datetime) -> datetime:
    """When beat fires `job` next after `moment` (aware datetimes)."""
    if job.every is not None:
        return moment + job.every
    if job.cron is None:  # the config guarantees exactly one of every/cron
        raise ValueError(f"periodic job {job.name!r} has neither every nor cron")
    # Celery measures "remaining" from its own clock; pin that clock to
    # `moment` so the answer depends on the arguments only.
    schedule = beat_crontab(job.cron, nowfun=lambda: moment)
    return moment + schedule.remaining_estimate(moment)


def job_health(
    job: PeriodicJob,
    *,
    beat_seen_at: datetime | None,
    last_tick_at: datetime | None,
    last_status: str,
    now: datetime,
) -> JobHealth:
    """Classify one periodic job.

    A job is stale when its last tick (or, before the first one, the start of
    the beat that scheduled it) is older than two of its intervals: one missed
    tick is tolerated, because beat and the worker each add some delay.
    """
    if not job.enabled:
        return JobHealth("disabled", None)
    anchor = last_tick_at or beat_seen_at
    if anchor is None:
        return JobHealth("unscheduled", None)
    due_by = next_fire_after(job, next_fire_after(job, anchor))
    if now > due_by:
        return JobHealth("stale", due_by)
    if last_tick_at is None:
        return JobHealth("pending", due_by)
    return JobHealth("failing" if last_status == "error" else "ok", due_by)


class ConfiguredScheduler(PersistentScheduler):
    """Beat's scheduler with the schedule of `configured_jobs`, built when beat starts.

    The schedule cannot be a setting: the apps declare their default jobs in
    ready(), after the settings module has loaded. Beat sets Django up before
    it creates the scheduler, so the apps are ready here. The persistent store
    keeps last-run times across restarts; entries no longer configured are
    dropped from it (merge_inplace).
    """

    def setup_schedule(self) -> None:
        import django

        django.setup()
        self.app.conf.beat_schedule = beat_schedule(configured_jobs())
        super().setup_schedule()

    # --- one beat per deployment (D-K25) -------------------------------------------------

    _holder: str | None = None
    _holding: bool | None = None  # as last logged: True, False, or not yet known

    def tick(self, *args: Any, **kwargs: Any) -> float:
        """Send what is due only while this beat holds the lease; renew it every third."""
        lease = self._lease_period()
        if not self._hold_lease(lease):
            return lease / 3
        return float(min(super().tick(*args, **kwargs), lease / 3))

    def _lease_period(self) -> float:
        from django.conf import settings

        from xworkmate.config.kernel import SERVICE

        return SERVICE.of(settings.XWORKMATE).beat_lease.total_seconds()

    def _hold_lease(self, seconds: float) -> bool:
        from datetime import timedelta

        from django.db import DatabaseError, close_old_connections
        from django.utils import timezone

        from xworkmate.services import beat_lease_hold

        if self._holder is None:
            self._holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        close_old_connections()  # beat sleeps between ticks; a connection may have died
        try:
            holding = beat_lease_hold(
                holder=self._holder, now=timezone.now(), period=timedelta(seconds=seconds)
            )
        except DatabaseError as exc:
            # Unsure who holds it: send nothing (the holder, if any, still does).
            logger.warning("beat: cannot reach the database for the lease: %s", exc)
            holding = False
        if holding != self._holding:
            if holding:
                logger.info("beat: %s holds the beat lease; sends the periodic jobs", self._holder)
            else:
                logger.warning(
                    "beat: another beat holds the beat lease; %s stands by and takes over "
                    "when it expires",
                    self._holder,
                )
            self._holding = holding
        return holding


@beat_init.connect
def _beat_started(**_: Any) -> None:
    """Record which jobs this beat schedules, so /healthz can tell "not yet" from "never".

    Connected when this module is imported, which beat does before it starts:
    it builds its scheduler (ConfiguredScheduler, the CELERY_BEAT_SCHEDULER
    setting) before it sends beat_init.
    """
    import django

    django.setup()
    from django.conf import settings
    from django.utils import timezone

    from xworkmate.services import periodic_jobs_mark_seen

    jobs = [job for job in configured_jobs(settings.XWORKMATE) if job.enabled]
    periodic_jobs_mark_seen(jobs=jobs, now=timezone.now())
