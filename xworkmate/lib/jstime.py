"""Calendar arithmetic and the wire's time format, as JavaScript computes them.

The bridge and OpenClaw are JavaScript programs: every time this service puts
on the wire must read exactly as `Date.prototype.toISOString()` would print it
(UTC, milliseconds, `Z`), and the schedule engine works on the same integer
milliseconds. One formatter for both keeps the gateway's `updatedAt` and the
schedule preview's `iso` byte-identical in form (D-K7).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

__all__ = [
    "civil_from_days",
    "days_from_civil",
    "days_in_month",
    "ms_to_iso",
    "wire_time",
]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS = timedelta(milliseconds=1)
_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_month(year: int, month: int) -> int:
    if month == 2 and _is_leap(year):
        return 29
    return _MONTH_DAYS[month - 1]


def days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm)."""
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def civil_from_days(z: int) -> tuple[int, int, int]:
    """Inverse of :func:`days_from_civil`: (year, month, day)."""
    z += 719468
    era = (z if z >= 0 else z - 146096) // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return y + (m <= 2), m, d


def ms_to_iso(ms: int) -> str:
    """UTC ISO-8601 with milliseconds and ``Z``, exactly like JavaScript's ``toISOString``.

    >>> ms_to_iso(1773104400000)
    '2026-03-10T01:00:00.000Z'
    """
    days, rem = divmod(int(ms), 86_400_000)
    y, m, d = civil_from_days(days)
    sec, milli = divmod(rem, 1000)
    hh, rest = divmod(sec, 3600)
    mi, ss = divmod(rest, 60)
    # JavaScript switches to the expanded six-digit year form outside 0..9999.
    year = f"{y:04d}" if 0 <= y <= 9999 else f"{'+' if y > 0 else '-'}{abs(y):06d}"
    return f"{year}-{m:02d}-{d:02d}T{hh:02d}:{mi:02d}:{ss:02d}.{milli:03d}Z"


def wire_time(moment: datetime) -> str:
    """An aware datetime as the wire shows it: ``toISOString()`` of the same instant.

    JavaScript dates hold whole milliseconds, so the microseconds are dropped
    (floored, as a Date built from the same instant would hold them).
    """
    # Integer arithmetic: a float timestamp can land a hair below a whole millisecond.
    return ms_to_iso((moment - _EPOCH) // _ONE_MS)
