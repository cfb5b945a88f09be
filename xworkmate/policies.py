"""Pure rules of the kernel: API key scopes and last use, periodic-job health.

No database, no clock: callers pass `now`. Tested directly in tests/xworkmate.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from xworkmate.beat_cron import beat_crontab
from xworkmate.config import PeriodicJob

# The areas an API key's scopes name (`<area>:read` / `<area>:write`).
AREAS = ("gateway", "plans", "longrun", "delivery")
SCOPES = tuple(f"{area}:{level}" for area in AREAS for level in ("read", "write"))

# How long a key's last_used_at may lag: we write it at most this often, so a
# busy bridge does not turn every request into an UPDATE.
LAST_USED_RESOLUTION = timedelta(seconds=60)


def scope_allows(granted: list[str] | tuple[str, ...], required: str) -> bool:
    """Write implies read within one area; areas never imply each other."""
    if required in granted:
        return True
    area, _, level = required.partition(":")
    return level == "read" and f"{area}:write" in granted


def last_used_is_stale(last_used_at: datetime | None, now: datetime) -> bool:
    """Whether a use at `now` should be written (D-K8: at most once per resolution)."""
    return last_used_at is None or now - last_used_at >= LAST_USED_RESOLUTION


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
