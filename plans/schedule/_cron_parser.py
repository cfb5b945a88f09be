"""croner 10's ``CronPattern.parse``, step by step: a cron expression into per-field arrays.

The same input is accepted or rejected with the same message as croner's; the
rules it follows are listed in :mod:`.cron`, which turns the arrays into a
:class:`~.cron.CronPattern`.
"""

from __future__ import annotations

import re

from .errors import ScheduleError

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
