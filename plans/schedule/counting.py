"""How many fire times a schedule has in a span, without walking them one by one (D-C26).

Walking a schedule from one fire time to the next (:func:`compute_next_run_ms`) costs
microseconds a step, so a year of a cron that fires every second is 31 million steps.
A long pause lists only its newest fire times and counts the others exactly (D-C26),
so the count must not cost the walk:

* ``every`` is arithmetic on its anchor's grid (``anchorMs + k * everyMs``, k >= 0);
* ``cron`` counts matching wall-clock seconds day by day
  (:meth:`CronPattern.count_walls`) wherever the zone keeps one UTC offset, because
  there a wall time and its instant differ by that offset and nothing else; only the
  few hours around an offset change (DST, a zone's new rules) are walked with the
  engine itself, since there croner's mapping of wall times to instants (a gap's
  times moved forward, a repeated hour fired once) decides what fires;
* ``at`` is its one instant.

The answer is exactly the number of fire times a walk from the first one at or after
the span's start visits before its end (the tests check it against such walks).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from zoneinfo import ZoneInfo

from ._time import _offset, resolve_zone
from .engine import (
    _cron_parts,
    _every_ms,
    _finite,
    _kind,
    compute_next_run_ms,
    parse_at_ms,
    resolve_stagger_ms,
    stagger_offset_ms,
)
from .errors import ScheduleError

__all__ = ["count_fire_times"]

_SAMPLE_S = 6 * 3600  # how often the zone's offset is read; no zone changes it twice in 6 h
_LOOK_AROUND_S = 2 * 86_400  # changes this far outside the span may still reach into it
# Around an offset change the walk is used over the change's size plus this: croner's
# fromTZ probes one hour back, so beyond two hours a wall time maps by the offset alone.
_MARGIN_S = 2 * 3600


def count_fire_times(
    schedule: Mapping[str, object], *, start_ms: int, end_ms: int, host_tz: str, job_id: str
) -> int:
    """The number of the schedule's fire times f with ``start_ms <= f < end_ms``.

    Raises :class:`ScheduleError` when the schedule cannot be computed, and for an
    ``every`` without ``anchorMs`` (a stored job always has one: it has no grid else).
    """
    if end_ms <= start_ms:
        return 0
    kind = _kind(schedule)
    if kind == "at":
        return int(start_ms <= parse_at_ms(schedule.get("at")) < end_ms)
    if kind == "every":
        return _count_every(schedule, start_ms, end_ms)
    pattern, zone_name = _cron_parts(schedule, host_tz)
    zone = resolve_zone(zone_name)
    if not pattern.can_fire():
        return 0
    # A fire time is a croner match (a whole second) plus the job's stagger offset.
    offset = stagger_offset_ms(job_id, resolve_stagger_ms(schedule)) if job_id else 0
    first_s = -((offset - start_ms) // 1000)  # ceil((start_ms - offset) / 1000)
    end_s = -((offset - end_ms) // 1000)
    total = 0
    cursor = first_s
    for low, high in _changes(zone, first_s, end_s):
        total += pattern.count_walls(cursor + _offset(zone, cursor), low + _offset(zone, cursor))
        total += _walk(schedule, low * 1000 + offset, high * 1000 + offset, host_tz, job_id)
        cursor = high
    total += pattern.count_walls(cursor + _offset(zone, cursor), end_s + _offset(zone, cursor))
    return total


def _count_every(schedule: Mapping[str, object], start_ms: int, end_ms: int) -> int:
    every = _every_ms(schedule)
    anchor = _finite(schedule.get("anchorMs"))
    if anchor is None:
        raise ScheduleError("invalid schedule.anchorMs: an every schedule without one has no grid")
    base = max(0, math.floor(anchor))
    first = max(0, -((base - start_ms) // every))  # the first step at or after start
    after_last = max(0, -((base - end_ms) // every))  # the first step at or after end
    return max(0, after_last - first)


def _walk(
    schedule: Mapping[str, object], start_ms: int, end_ms: int, host_tz: str, job_id: str
) -> int:
    """Fire times in [start_ms, end_ms), walked one by one with the engine."""
    count, cursor = 0, start_ms - 1
    while True:
        following = compute_next_run_ms(schedule, now_ms=cursor, host_tz=host_tz, job_id=job_id)
        if following is None or following >= end_ms:
            return count
        count, cursor = count + 1, following


def _changes(zone: ZoneInfo, start_s: int, end_s: int) -> list[tuple[int, int]]:
    """The stretches of [start_s, end_s) near the zone's offset changes, in order and
    merged: outside them the zone keeps one offset, so a wall time maps by it alone."""
    stretches: list[tuple[int, int]] = []
    moment = start_s - _LOOK_AROUND_S
    before = _offset(zone, moment)
    while moment < end_s + _LOOK_AROUND_S:
        after_moment = moment + _SAMPLE_S
        after = _offset(zone, after_moment)
        if after != before:
            # The first second with the new offset, by bisection.
            low, high = moment, after_moment
            while high - low > 1:
                middle = (low + high) // 2
                low, high = (middle, high) if _offset(zone, middle) == before else (low, middle)
            reach = abs(after - before) + _MARGIN_S
            low, high = max(start_s, high - reach), min(end_s, high + reach)
            if low < high:
                if stretches and low <= stretches[-1][1]:
                    earlier_low, earlier_high = stretches.pop()
                    low, high = earlier_low, max(earlier_high, high)
                stretches.append((low, high))
        moment, before = after_moment, after
    return stretches
