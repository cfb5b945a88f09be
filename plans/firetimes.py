"""The fire times of a job's schedule: which passed in a span, and which comes next.

Pure (D-K2, D-K18): callers pass the schedule, the times and the host's zone. Catch-up
after downtime (D-C10, D-C23: plans/runpolicy.py), the fire times that come while a run
is still out (D-C20, D-C24) and those during an error backoff (D-C21) all walk the same
grid, so missed and skipped rows never mix two grids.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from plans.schedule import compute_next_run_ms

# Fire times recorded one by one after downtime; beyond, the last row counts the rest.
MAX_MISSED_RECORDED = 100


def schedule_kind(schedule: Mapping[str, object]) -> str:
    return str(schedule.get("kind", "")).strip().lower()


@dataclass(frozen=True)
class FireTimes:
    times: tuple[int, ...]  # oldest first; the newest MAX_MISSED_RECORDED + 1 of them
    more: int  # older fire times beyond those, dropped (counted in a row's note)
    next_ms: int | None  # the first fire time after the span


def fire_times(
    schedule: Mapping[str, object], *, due_ms: int, to_ms: int, host_tz: str, job_id: str
) -> FireTimes:
    """The fire times of a recurring schedule from `due_ms` (a job's due time is one)
    through `to_ms`, on the schedule's own grid (an `every` on its anchor's steps)."""
    if due_ms > to_ms:
        return FireTimes((), 0, due_ms)
    passed = [due_ms]
    more = 0
    cursor: int | None = due_ms
    while cursor is not None:
        # + 1: an every schedule answers "now" itself when now is on a boundary.
        cursor = compute_next_run_ms(schedule, now_ms=cursor + 1, host_tz=host_tz, job_id=job_id)
        if cursor is None or cursor > to_ms:
            break
        if len(passed) > MAX_MISSED_RECORDED:
            # Keep the newest MAX_MISSED_RECORDED + 1; count the dropped oldest ones.
            passed.pop(0)
            more += 1
        passed.append(cursor)
    return FireTimes(tuple(passed), more, cursor)


def fires_after(
    schedule: Mapping[str, object], *, fire_at_ms: int, host_tz: str, job_id: str
) -> int | None:
    """The schedule's first fire time after `fire_at_ms` (None for a one-shot): what a
    job waits for while the run of that fire time is out (D-C20)."""
    if schedule_kind(schedule) == "at":
        return None
    return compute_next_run_ms(schedule, now_ms=fire_at_ms + 1, host_tz=host_tz, job_id=job_id)


def first_fire_at_or_after(
    schedule: Mapping[str, object], *, at_ms: int, host_tz: str, job_id: str
) -> int | None:
    """The schedule's first fire time at or after `at_ms`: where a job waiting out its
    error backoff runs again, on its own grid (D-C21)."""
    candidate = compute_next_run_ms(schedule, now_ms=at_ms - 1, host_tz=host_tz, job_id=job_id)
    if candidate is not None and candidate < at_ms:
        # An every schedule answers "now" itself when now is on a boundary.
        candidate = compute_next_run_ms(schedule, now_ms=at_ms, host_tz=host_tz, job_id=job_id)
    return candidate


def fire_times_between(
    schedule: Mapping[str, object], *, after_ms: int, before_ms: int, host_tz: str, job_id: str
) -> FireTimes:
    """The fire times of a recurring schedule strictly after `after_ms` and strictly
    before `before_ms` (those a job in error backoff passed by, D-C21)."""
    if schedule_kind(schedule) == "at":
        return FireTimes((), 0, None)
    first = first_fire_at_or_after(schedule, at_ms=after_ms + 1, host_tz=host_tz, job_id=job_id)
    if first is None or first >= before_ms:
        return FireTimes((), 0, first)
    return fire_times(schedule, due_ms=first, to_ms=before_ms - 1, host_tz=host_tz,
                      job_id=job_id)
