"""Cron expressions as croner 10 (inside OpenClaw) reads them, with a fast evaluator.

Parsing follows croner's ``CronPattern.parse`` step by step, so that the same input is
accepted or rejected with the same message (``CronPattern: Invalid value for minute: 61``).
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

import re
from bisect import bisect_left
from dataclasses import dataclass, field
from datetime import datetime

from xworkmate.lib.jstime import civil_from_days, days_from_civil, days_in_month

from .errors import ScheduleError

__all__ = ["CronPattern", "parse_cron"]

# croner gives up on patterns without a year field once the search passes year 3000,
# and on explicit years after 9999.
_STAR_YEAR_LIMIT = 3000

# JavaScript's \s (what croner splits fields on), not Python's Unicode-wide idea of space.
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_FIELD_RE = re.compile(f"[^{_JS_SPACE}]+")
_LEADING_INT_RE = re.compile(r"[0-9]+")  # parseInt(): leading ASCII digits only
_RANGE_STEP_RE = re.compile(r"([0-9]+)-([0-9]+)/([0-9]+)")

_ILLEGAL_DAY = re.compile(r"[^/*0-9,\-WwLl]")
_ILLEGAL_WEEKDAY = re.compile(r"[^/*0-9,\-#Ll]")
_ILLEGAL_OTHER = re.compile(r"[^/*0-9,\-]")

# croner replaces names with plain regex replaces, in this order, case-insensitively
# (ASCII only: JavaScript's /i without the u flag does not fold the long s, U+017F, to "s").
_MONTH_NAMES = tuple(
    (re.compile(name, re.IGNORECASE | re.ASCII), str(number))
    for number, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
        start=1,
    )
)
_DAY_NAMES = (
    (re.compile("-sun", re.IGNORECASE | re.ASCII), "-7"),  # SUN as a range end is 7
    *(
        (re.compile(name, re.IGNORECASE | re.ASCII), str(number))
        for number, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))
    ),
)

_NICKNAMES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

# Weekday occurrence bits: 1st..5th occurrence in the month, then "last occurrence".
_OCCURRENCE_BITS = (0b1, 0b10, 0b100, 0b1000, 0b10000)
_LAST_OCCURRENCE = 0b100000
_ANY_OCCURRENCE = 0b111111

_PART_SIZES = {
    "second": 60,
    "minute": 60,
    "hour": 24,
    "day": 31,
    "nearestWeekdays": 31,
    "month": 12,
    "dayOfWeek": 7,
    "year": 10000,
}


def _parse_int(text: str) -> int | None:
    """JavaScript ``parseInt(text, 10)`` for the characters a field can contain."""
    match = _LEADING_INT_RE.match(text)
    return int(match.group()) if match else None


class _Parser:
    """croner's ``CronPattern.parse``; fills the raw per-field arrays."""

    def __init__(self) -> None:
        # Years get a set instead of croner's 10000-slot array: parsing stays cheap.
        self.arrays: dict[str, list[int]] = {
            name: [0] * size for name, size in _PART_SIZES.items() if name != "year"
        }
        self.years: set[int] = set()
        self.all_years = False
        self.last_day_of_month = False
        self.last_weekday = False
        self.star_dom = False
        self.star_dow = False
        self.star_year = False
        self.and_logic = False

    def parse(self, pattern: str) -> None:
        if "@" in pattern:
            nickname = pattern.strip().lower()
            if nickname == "@reboot":
                raise ScheduleError(
                    "CronPattern: @reboot is not supported in this environment. This is an "
                    "event-based trigger that requires system startup detection."
                )
            pattern = _NICKNAMES.get(nickname, pattern).strip()
        parts = _FIELD_RE.findall(pattern) or [""]
        if not 5 <= len(parts) <= 7:
            raise ScheduleError(
                f"CronPattern: invalid configuration format ('{pattern}'), exactly five, six, "
                "or seven space separated parts are required."
            )
        if len(parts) == 5:
            parts.insert(0, "0")
        if len(parts) == 6:
            parts.append("*")

        if parts[3].upper() == "LW":
            self.last_weekday = True
            parts[3] = ""
        elif "L" in parts[3].upper():
            parts[3] = parts[3].replace("L", "").replace("l", "")
            self.last_day_of_month = True
        self.star_dom = parts[3] == "*"
        self.star_year = parts[6] == "*"
        if len(parts[4]) >= 3:
            for regex, number in _MONTH_NAMES:
                parts[4] = regex.sub(number, parts[4])
        if len(parts[5]) >= 3:
            for regex, number in _DAY_NAMES:
                parts[5] = regex.sub(number, parts[5])
        if parts[5].startswith("+"):
            self.and_logic = True
            parts[5] = parts[5][1:]
            if parts[5] == "":
                raise ScheduleError(
                    "CronPattern: Day-of-week field cannot be empty after '+' modifier."
                )
        self.star_dow = parts[5] == "*"
        # "?" means "any" in every field, but only after the star checks above: a "?"
        # day field is therefore restricted for the day-of-month/day-of-week OR rule.
        if "?" in pattern:
            parts = [part.replace("?", "*") for part in parts]

        for index, part in enumerate(parts):
            illegal = (
                _ILLEGAL_DAY if index == 3 else _ILLEGAL_WEEKDAY if index == 5 else _ILLEGAL_OTHER
            )
            if illegal.search(part):
                raise ScheduleError(
                    f"CronPattern: configuration entry {index} ({part}) contains illegal "
                    "characters."
                )

        self._part("second", parts[0], 0, 1)
        self._part("minute", parts[1], 0, 1)
        self._part("hour", parts[2], 0, 1)
        self._part("day", parts[3], -1, 1)
        self._part("month", parts[4], -1, 1)
        self._part("dayOfWeek", parts[5], 0, _ANY_OCCURRENCE)
        self._part("year", parts[6], 0, 1)

    def _part(self, kind: str, conf: str, offset: int, default: int) -> None:
        if conf == "" and not (kind == "day" and (self.last_day_of_month or self.last_weekday)):
            raise ScheduleError(
                f"CronPattern: configuration entry {kind} ({conf}) is empty, check for "
                "trailing spaces."
            )
        if conf == "*":
            if kind == "year":
                self.all_years = True
            else:
                self.arrays[kind] = [default] * _PART_SIZES[kind]
            return
        pieces = conf.split(",")
        if len(pieces) > 1:
            for piece in pieces:
                self._part(kind, piece, offset, default)
        elif "-" in conf and "/" in conf:
            self._range_with_step(conf, kind, offset, default)
        elif "-" in conf:
            self._range(conf, kind, offset, default)
        elif "/" in conf:
            self._step(conf, kind, offset, default)
        elif conf != "":
            self._number(conf, kind, offset, default)

    @staticmethod
    def _extract_nth(conf: str, kind: str) -> tuple[str, str | None]:
        if "#" in conf:
            if kind != "dayOfWeek":
                raise ScheduleError("CronPattern: nth (#) only allowed in day-of-week field")
            pieces = conf.split("#")
            return pieces[0], pieces[1]
        if conf.upper().endswith("L"):
            if kind != "dayOfWeek":
                raise ScheduleError(
                    "CronPattern: L modifier only allowed in day-of-week field (use L alone "
                    "for day-of-month)"
                )
            return conf[:-1], "L"
        return conf, None

    def _number(self, conf: str, kind: str, offset: int, default: int) -> None:
        rest, nth = self._extract_nth(conf, kind)
        if "W" in conf.upper():
            if kind != "day":
                raise ScheduleError(
                    "CronPattern: Nearest weekday modifier (W) only allowed in day-of-month."
                )
            kind = "nearestWeekdays"
        value = _parse_int(rest)
        if value is None:
            raise ScheduleError(f"CronPattern: {kind} is not a number: '{conf}'")
        self._set(kind, value + offset, nth or default)

    @staticmethod
    def _check_range(lower: int, upper: int, step: int | None, kind: str, conf: str) -> None:
        if lower > upper:
            raise ScheduleError(f"CronPattern: From value is larger than to value: '{conf}'")
        if step is not None:
            if step == 0:
                raise ScheduleError("CronPattern: Syntax error, illegal stepping: 0")
            if step > _PART_SIZES[kind]:
                raise ScheduleError(
                    "CronPattern: Syntax error, steps cannot be greater than maximum value of "
                    f"part ({_PART_SIZES[kind]})"
                )

    def _range_with_step(self, conf: str, kind: str, offset: int, default: int) -> None:
        if "W" in conf.upper():
            raise ScheduleError(
                "CronPattern: Syntax error, W is not allowed in ranges with stepping."
            )
        rest, nth = self._extract_nth(conf, kind)
        match = _RANGE_STEP_RE.fullmatch(rest)
        if match is None:
            raise ScheduleError(f"CronPattern: Syntax error, illegal range with stepping: '{conf}'")
        lower = int(match.group(1)) + offset
        upper = int(match.group(2)) + offset
        step = int(match.group(3))
        self._check_range(lower, upper, step, kind, conf)
        for value in range(lower, upper + 1, step):
            self._set(kind, value, nth or default)

    def _range(self, conf: str, kind: str, offset: int, default: int) -> None:
        if "W" in conf.upper():
            raise ScheduleError("CronPattern: Syntax error, W is not allowed in a range.")
        rest, nth = self._extract_nth(conf, kind)
        bounds = rest.split("-")
        if len(bounds) != 2:
            raise ScheduleError(f"CronPattern: Syntax error, illegal range: '{conf}'")
        lower = _parse_int(bounds[0])
        upper = _parse_int(bounds[1])
        if lower is None:
            raise ScheduleError("CronPattern: Syntax error, illegal lower range (NaN)")
        if upper is None:
            raise ScheduleError("CronPattern: Syntax error, illegal upper range (NaN)")
        self._check_range(lower + offset, upper + offset, None, kind, conf)
        for value in range(lower + offset, upper + offset + 1):
            self._set(kind, value, nth or default)

    def _step(self, conf: str, kind: str, offset: int, default: int) -> None:
        if "W" in conf.upper():
            raise ScheduleError(
                "CronPattern: Syntax error, W is not allowed in parts with stepping."
            )
        rest, nth = self._extract_nth(conf, kind)
        pieces = rest.split("/")
        if len(pieces) != 2:
            raise ScheduleError(f"CronPattern: Syntax error, illegal stepping: '{conf}'")
        if pieces[0] == "":
            raise ScheduleError(
                f"CronPattern: Syntax error, stepping with missing prefix ('{conf}') is not "
                "allowed. Use wildcard (*/step) or range (min-max/step) instead."
            )
        if pieces[0] != "*":
            raise ScheduleError(
                f"CronPattern: Syntax error, stepping with numeric prefix ('{conf}') is not "
                "allowed. Use wildcard (*/step) or range (min-max/step) instead."
            )
        step = _parse_int(pieces[1])
        if step is None:
            raise ScheduleError("CronPattern: Syntax error, illegal stepping: (NaN)")
        size = _PART_SIZES[kind]
        self._check_range(0, size - 1, step, kind, conf)
        for value in range(0, size, step):
            self._set(kind, value, nth or default)

    def _set(self, kind: str, index: int, value: int | str) -> None:
        if kind == "dayOfWeek":
            if index == 7:
                index = 0
            if not 0 <= index <= 6:
                raise ScheduleError(f"CronPattern: Invalid value for dayOfWeek: {index}")
            self._set_nth(index, value)
            return
        size = _PART_SIZES[kind]
        if kind == "year":
            if not 1 <= index < size:
                raise ScheduleError(
                    f"CronPattern: Invalid value for year: {index} (supported range: 1-9999)"
                )
            self.years.add(index)
            return
        if not 0 <= index < size:
            raise ScheduleError(f"CronPattern: Invalid value for {kind}: {index}")
        self.arrays[kind][index] = 1

    def _set_nth(self, weekday: int, value: int | str) -> None:
        array = self.arrays["dayOfWeek"]
        if isinstance(value, str) and value.upper() == "L":
            array[weekday] |= _LAST_OCCURRENCE
            return
        if value == _ANY_OCCURRENCE:
            array[weekday] = _ANY_OCCURRENCE
            return
        # The nth text comes from "1#2" (never empty: "1#" means any); JavaScript compares
        # it as a number, so "02" is 2 and "2L" is NaN.
        if isinstance(value, int):
            number: int | None = value
        else:
            number = int(value) if value.isascii() and value.isdigit() else None
        if number is not None and 0 < number < 6:
            array[weekday] |= _OCCURRENCE_BITS[number - 1]
            return
        raise ScheduleError(
            "CronPattern: nth weekday out of range, should be 1-5 or L. "
            f"Value: {value}, Type: {'number' if isinstance(value, int) else 'string'}"
        )


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
