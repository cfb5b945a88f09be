"""Reads of the plans app. Today: the schedule preview people and the bridge rely on."""

from __future__ import annotations

from collections.abc import Mapping

from plans.schedule import next_runs, parse_at_ms, validate_schedule

MAX_PREVIEW_RUNS = 50


def schedule_preview(
    *,
    schedule: Mapping[str, object],
    after_ms: int,
    count: int,
    host_tz: str,
    min_every_ms: int,
    job_id: str | None = None,
) -> list[int]:
    """The next `count` fire times after `after_ms`, exactly as OpenClaw would run them.

    The schedule is validated as for creating a job, except that an `at` in the
    past is not an error here: it simply has no future run, so the answer is [].
    Raises plans.schedule.ScheduleError with the engine's (croner-style) message.
    """
    if str(schedule.get("kind", "")).strip().lower() == "at":
        at_ms = parse_at_ms(schedule.get("at"))
        if at_ms <= after_ms:
            return []
    validate_schedule(schedule, now_ms=after_ms, min_every_ms=min_every_ms, host_tz=host_tz)
    runs = next_runs(schedule, after_ms=after_ms, count=count, host_tz=host_tz, job_id=job_id)
    return [ms for ms in runs if ms > after_ms]
