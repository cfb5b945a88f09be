"""The fire times of a job's schedule: which passed in a span, and which comes next.

Pure (D-K2, D-K18): callers pass the schedule, the times and the host's zone. Catch-up
after downtime (D-C10, D-C23: plans/runpolicy.py), the fire times that come while a run
is still out (D-C20, D-C24), those during an error backoff (D-C21) and those of a pause
(D-C26) all walk the same grid, so missed and skipped rows never mix two grids.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from plans.schedule import compute_next_run_ms, parse_at_ms
from plans.schedule.counting import count_fire_times

# Fire times recorded one by one after downtime or a pause (D-C26); beyond, the newest
# row counts the rest.
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


def newest_fire_times(
    schedule: Mapping[str, object], *, after_ms: int, before_ms: int, host_tz: str, job_id: str
) -> FireTimes:
    """The fire times strictly after `after_ms` and strictly before `before_ms` (those a
    pause passed by, D-C26): the newest MAX_MISSED_RECORDED listed, oldest first, and
    `more` the exact number of older ones.

    A pause may last a year of an every-second schedule, so nothing walks the whole span:
    the count is arithmetic (plans.schedule.counting), a stretch back from the end,
    doubled until it holds enough fire times, says where the newest begin, and only that
    stretch is walked. Raises ScheduleError when the schedule cannot be computed.
    """
    start = after_ms + 1
    total = count_fire_times(schedule, start_ms=start, end_ms=before_ms, host_tz=host_tz,
                             job_id=job_id)
    if schedule_kind(schedule) == "at":  # one fire time, in the span or not
        return FireTimes((parse_at_ms(schedule.get("at")),) if total else (), 0, None)
    begin = start
    if total > MAX_MISSED_RECORDED:
        width, held, begin = 1000, 0, before_ms
        while held < MAX_MISSED_RECORDED and begin > start:
            earlier = max(start, before_ms - width)
            held += count_fire_times(schedule, start_ms=earlier, end_ms=begin, host_tz=host_tz,
                                     job_id=job_id)
            begin, width = earlier, width * 2
    walked = fire_times_between(schedule, after_ms=begin - 1, before_ms=before_ms,
                                host_tz=host_tz, job_id=job_id)
    listed = walked.times[-MAX_MISSED_RECORDED:]
    return FireTimes(listed, total - len(listed), walked.next_ms)
