"""Cron expressions as croner 10 (inside OpenClaw) reads them, with a fast evaluator.

Parsing follows croner's ``CronPattern.parse`` step by step (:mod:`._cron_parser`), so
that the same input is accepted or rejected with the same message
(``CronPattern: Invalid value for minute: 61``).
The rules that differ from classic Vixie cron, all on purpose:

* 5 fields get a leading ``0`` seconds field; 5 and 6 fields get a trailing ``*`` year
  field (years 1-9999); 7 fields are ``second minute hour day month weekday year``.
* Day of month and day of week are OR-ed unless one of them is exactly ``*``. A ``*/N``
  or ``?`` field counts as restricted (croner decides "star" before expanding them), so
  ``0 12 ? * MON`` fires every day. A ``+`` before the weekday field (``+MON``) ANDs them.
* ``L`` in the day field is the last day of the month (``LW`` the last weekday), ``15W``
  the weekday nearest the 15th (never crossing the month); ``5L`` in the weekday field
  is the last Friday, ``1#2`` the second Monday; ``7`` and ``SUN`` are Sunday.
* Stepping needs a ``*`` or range prefix (``*/5``, ``10-50/5``); ``5/10`` is an error
  (croner's ``sloppyRanges`` is off in OpenClaw).

The evaluator answers "first wall-clock second >= w that matches" without stepping: each
field keeps a lookup table of the next allowed value, and which days of a month match is
a bit mask that depends only on the month's length and the weekday of its first day
(28 combinations at most), cached per pattern.

One deliberate difference from croner (D-C2, docs/decisions/plans.md): croner tries day numbers past
the end of a month (Feb 30), lets ``Date`` roll them into the next month (Mar 2) and
resumes there, which skips a matching Mar 1. Here only real days are candidates, so that
day fires.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property

from xworkmate.lib.jstime import civil_from_days, days_from_civil, days_in_month

from ._cron_parser import _LAST_OCCURRENCE, _OCCURRENCE_BITS, _PART_SIZES, _Parser
from .errors import ScheduleError

__all__ = ["CronPattern", "parse_cron"]

# croner gives up on patterns without a year field once the search passes year 3000,
# and on explicit years after 9999.
_STAR_YEAR_LIMIT = 3000


def _next_table(allowed: list[int], size: int) -> tuple[int, ...]:
    """``table[v]`` is the smallest allowed value >= v, or -1; ``table[size]`` is -1."""
    table = []
    start = 0
    for value in range(size):
        if allowed[value]:
            table.extend([value] * (value - start + 1))
            start = value + 1
    table.extend([-1] * (size + 1 - start))
    return tuple(table)


@dataclass(frozen=True, eq=False)
class CronPattern:
    """A parsed cron expression. Build it with :func:`parse_cron`.

    Field values are stored as next-value tables indexed by the current value (seconds
    0-59, minutes 0-59, hours 0-23, months 1-12); days are evaluated through per-month bit
    masks, see :meth:`_day_mask`.
    """

    expr: str
    _seconds: tuple[int, ...] = field(repr=False)
    _minutes: tuple[int, ...] = field(repr=False)
    _hours: tuple[int, ...] = field(repr=False)
    _months: tuple[int, ...] = field(repr=False)  # index 1..12 (+13 = -1)
    _years: tuple[int, ...] | None = field(repr=False)  # sorted; None: any year (up to 2999)
    _dom: tuple[bool, ...] = field(repr=False)  # index 0..30 = day 1..31
    _nearest: tuple[int, ...] = field(repr=False)  # days with a W modifier
    _last_dom: bool = field(repr=False)
    _last_weekday: bool = field(repr=False)
    _dow: tuple[int, ...] = field(repr=False)  # occurrence bit masks, Sunday = 0
    _star_dom: bool = field(repr=False)
    _star_dow: bool = field(repr=False)
    _and_logic: bool = field(repr=False)
    _mask_cache: dict[tuple[int, int], int] = field(default_factory=dict, repr=False)

    # ----------------------------------------------------------------- day matching
    def _day_matches(self, day: int, length: int, first_weekday: int) -> bool:
        weekday = (first_weekday + day - 1) % 7
        dom = self._dom[day - 1]
        if not dom:
            for target in self._nearest:
                if target <= length and _nearest_weekday(target, length, first_weekday) == day:
                    dom = True
                    break
        if self._last_weekday and day == _last_weekday(length, first_weekday):
            dom = True
        if self._last_dom and day == length:
            dom = True
        if self._star_dow:
            return dom
        bits = self._dow[weekday]
        dow = False
        if bits:
            occurrence = (day - 1) // 7  # 0 = first occurrence in the month
            if bits & _OCCURRENCE_BITS[occurrence]:
                dow = True
            elif bits & _LAST_OCCURRENCE:
                dow = day + 7 > length
        if self._and_logic or self._star_dom:
            return dom and dow
        return dom or dow  # croner's default (legacy) OR of day-of-month and day-of-week

    def _day_mask(self, length: int, first_weekday: int) -> int:
        """Bit ``d - 1`` is set when day ``d`` matches, in a month of ``length`` days whose
        first day is ``first_weekday`` (0 = Sunday). Only real days are candidates."""
        key = (length, first_weekday)
        mask = self._mask_cache.get(key)
        if mask is None:
            mask = 0
            for day in range(1, length + 1):
                if self._day_matches(day, length, first_weekday):
                    mask |= 1 << (day - 1)
            self._mask_cache[key] = mask
        return mask

    def can_fire(self) -> bool:
        """False when no calendar can ever match (``0 0 30 2 *``): checked over every
        month length and first weekday the allowed months can have."""
        for month in range(1, 13):
            if self._months[month] != month:
                continue
            lengths = (28, 29) if month == 2 else (days_in_month(2001, month),)
            for length in lengths:
                for first in range(7):
                    if self._day_mask(length, first):
                        return True
        return False

    # ------------------------------------------------------------------- matching
    def matches(self, local: datetime) -> bool:
        """Whether a local (naive or aware, read as wall clock) time matches, to the second."""
        y, mo, d = local.year, local.month, local.day
        if self._next_year(y) != y:
            return False
        if self._months[mo] != mo:
            return False
        first = (days_from_civil(y, mo, 1) + 4) % 7
        if not self._day_mask(days_in_month(y, mo), first) >> (d - 1) & 1:
            return False
        return (
            self._hours[local.hour] == local.hour
            and self._minutes[local.minute] == local.minute
            and self._seconds[local.second] == local.second
        )

    # --------------------------------------------------------------------- search
    def _next_year(self, year: int) -> int:
        if self._years is None:
            return year if year < _STAR_YEAR_LIMIT else -1
        index = bisect_left(self._years, year)
        return self._years[index] if index < len(self._years) else -1

    def next_wall(self, wall: int) -> int | None:
        """First matching wall-clock second >= ``wall`` (wall seconds, see ``_time``).

        Walks month -> day -> hour -> minute -> second like croner, jumping straight to the
        next allowed value of each field and resetting the smaller ones, so a search costs
        a handful of table lookups instead of stepping through seconds.
        """
        days, sod = divmod(wall, 86400)
        y, mo, d = civil_from_days(days)
        h, rest = divmod(sod, 3600)
        mi, s = divmod(rest, 60)
        months, hours, minutes, seconds = self._months, self._hours, self._minutes, self._seconds
        while True:
            ny = self._next_year(y)
            if ny < 0:
                return None
            if ny != y:
                y, mo, d, h, mi, s = ny, 1, 1, 0, 0, 0
            nm = months[mo]
            if nm < 0:
                y, mo, d, h, mi, s = y + 1, 1, 1, 0, 0, 0
                continue
            if nm != mo:
                mo, d, h, mi, s = nm, 1, 0, 0, 0
            first_day = days_from_civil(y, mo, 1)
            length = days_in_month(y, mo)
            mask = self._day_mask(length, (first_day + 4) % 7) >> (d - 1)
            if not mask:
                mo, d, h, mi, s = mo + 1, 1, 0, 0, 0
                if mo > 12:
                    y, mo = y + 1, 1
                continue
            nd = d + (mask & -mask).bit_length() - 1
            if nd != d:
                d, h, mi, s = nd, 0, 0, 0
            nh = hours[h]
            if nh < 0:
                d, h, mi, s = d + 1, 0, 0, 0
                if d > length:
                    mo, d = mo + 1, 1
                    if mo > 12:
                        y, mo = y + 1, 1
                continue
            if nh != h:
                h, mi, s = nh, 0, 0
            nmi = minutes[mi]
            if nmi < 0:
                h, mi, s = h + 1, 0, 0  # hours[24] is -1, which rolls over to the next day
                continue
            if nmi != mi:
                mi, s = nmi, 0
            ns = seconds[s]
            if ns < 0:
                mi, s = mi + 1, 0  # minutes[60] is -1, which rolls over to the next hour
                continue
            return (first_day + d - 1) * 86400 + h * 3600 + mi * 60 + ns

    # ------------------------------------------------------------------- counting
    def count_walls(self, start: int, end: int) -> int:
        """How many wall-clock seconds in ``[start, end)`` match, without visiting them.

        A day either matches (year, month and the day mask, as :meth:`next_wall` reads
        them) or not; in a matching day the matching seconds before a time of day are
        counted from the hour, minute and second tables. So the cost grows with the
        span's days, not with its matches (a paused every-second job, D-C26).
        """
        if end <= start:
            return 0
        total = 0
        for day in range(start // 86400, (end - 1) // 86400 + 1):
            y, mo, d = civil_from_days(day)
            if self._next_year(y) != y or self._months[mo] != mo:
                continue
            first = days_from_civil(y, mo, 1)
            if not self._day_mask(days_in_month(y, mo), (first + 4) % 7) >> (d - 1) & 1:
                continue
            base = day * 86400
            total += self._matches_before(min(end - base, 86400)) - self._matches_before(
                max(start - base, 0)
            )
        return total

    def _matches_before(self, second_of_day: int) -> int:
        """Matching times of a matching day earlier than ``second_of_day`` (0-86400)."""
        hours, minutes, seconds = self._allowed_times
        h, rest = divmod(second_of_day, 3600)
        mi, s = divmod(rest, 60)
        count = bisect_left(hours, h) * len(minutes) * len(seconds)
        if h < 24 and self._hours[h] == h:
            count += bisect_left(minutes, mi) * len(seconds)
            if self._minutes[mi] == mi:
                count += bisect_left(seconds, s)
        return count

    @cached_property
    def _allowed_times(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        # The hours, minutes and seconds allowed: a next-value table maps each to itself.
        def allowed(table: tuple[int, ...]) -> tuple[int, ...]:
            return tuple(value for value, following in enumerate(table) if following == value)

        return allowed(self._hours), allowed(self._minutes), allowed(self._seconds)


def _nearest_weekday(target: int, length: int, first_weekday: int) -> int:
    """croner's ``getNearestWeekday``: the weekday closest to day ``target``, same month."""
    weekday = (first_weekday + target - 1) % 7
    if weekday == 0:  # Sunday -> Monday, or Friday when the Sunday is the last day
        return target - 2 if target == length else target + 1
    if weekday == 6:  # Saturday -> Friday, or Monday when the Saturday is the 1st
        return target + 2 if target == 1 else target - 1
    return target


def _last_weekday(length: int, first_weekday: int) -> int:
    weekday = (first_weekday + length - 1) % 7
    if weekday == 0:
        return length - 2
    if weekday == 6:
        return length - 1
    return length


def parse_cron(expr: str) -> CronPattern:
    """Parse a cron expression the way croner 10 does (OpenClaw's options: OR logic for
    day-of-month/day-of-week, no sloppy ranges).

    Raises :class:`ScheduleError` with croner's message for anything croner rejects.
    """
    if not isinstance(expr, str):
        raise ScheduleError("CronPattern: Pattern has to be of type string.")
    parser = _Parser()
    parser.parse(expr)
    arrays = parser.arrays
    if parser.star_year:
        years: tuple[int, ...] | None = None
    elif parser.all_years:  # "?" in the year field: any year, but up to 9999
        years = tuple(range(1, _PART_SIZES["year"]))
    else:
        years = tuple(sorted(parser.years))
    month_table = _next_table(arrays["month"], 12)
    return CronPattern(
        expr=expr,
        _seconds=_next_table(arrays["second"], 60),
        _minutes=_next_table(arrays["minute"], 60),
        _hours=_next_table(arrays["hour"], 24),
        # Shift to 1-based months: _months[m] is the next allowed month >= m.
        _months=(-1, *(m + 1 if m >= 0 else -1 for m in month_table)),
        _years=years,
        _dom=tuple(map(bool, arrays["day"])),
        _nearest=tuple(i + 1 for i, v in enumerate(arrays["nearestWeekdays"]) if v),
        _last_dom=parser.last_day_of_month,
        _last_weekday=parser.last_weekday,
        _dow=tuple(arrays["dayOfWeek"]),
        _star_dom=parser.star_dom,
        _star_dow=parser.star_dow,
        _and_logic=parser.and_logic,
    )
