"""Calendar arithmetic, IANA zone lookup and croner's wall-clock <-> instant mapping.

Everything here works on integer seconds: "instants" are Unix seconds, "walls" are
the local wall-clock reading of a zone encoded as if it were UTC (so a wall of
``2026-03-08T02:30`` is ``days_from_civil(2026, 3, 8) * 86400 + 2.5 * 3600``). Keeping
both as plain ints avoids ``datetime`` objects on the hot path of the evaluator.
"""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from .errors import ScheduleError

__all__ = [
    "MAX_MS",
    "MIN_MS",
    "civil_from_days",
    "days_from_civil",
    "days_in_month",
    "from_wall",
    "ms_to_iso",
    "resolve_zone",
    "to_wall",
]

# The range of instants the engine accepts: years 1..9999, which is what Python's
# ``datetime`` (and therefore ``zoneinfo``) can convert.
MIN_MS = -62_135_596_800_000  # 0001-01-01T00:00:00.000Z
MAX_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z

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


@lru_cache(maxsize=1)
def _zone_names() -> dict[str, str]:
    # Intl (which croner uses) matches zone names case-insensitively ("utc", "asia/shanghai");
    # zoneinfo does not, so map the lower-cased names to the canonical spelling once.
    return {name.lower(): name for name in available_timezones()}


@lru_cache(maxsize=256)
def resolve_zone(name: str) -> ZoneInfo:
    """The zone for an IANA name, matched case-insensitively as Intl does.

    Raises :class:`ScheduleError` with croner 10's message for an unknown zone (it wraps
    Node's ``Invalid time zone specified: <name>``).
    """
    canonical = _zone_names().get(name.strip().lower())
    error = ScheduleError(
        f"CronDate: Failed to convert date to timezone '{name}'. This may happen with invalid "
        f"timezone names or dates. Original error: toTZ: Invalid timezone '{name}' or date. "
        "Please provide a valid IANA timezone (e.g., 'America/New_York', 'Europe/Stockholm'). "
        f"Original error: Invalid time zone specified: {name}"
    )
    if canonical is None:
        raise error
    try:
        return ZoneInfo(canonical)
    except (ZoneInfoNotFoundError, ValueError) as exc:  # pragma: no cover - tzdata mismatch
        raise error from exc


_MIN_S = MIN_MS // 1000 + 2 * 86400  # keep a margin so offset lookups never leave datetime's range
_MAX_S = MAX_MS // 1000 - 2 * 86400


def _offset(zone: ZoneInfo, t: int) -> int:
    """UTC offset in whole seconds of ``zone`` at instant ``t`` (Unix seconds)."""
    if t < _MIN_S:
        t = _MIN_S
    elif t > _MAX_S:
        t = _MAX_S
    off = datetime.fromtimestamp(t, zone).utcoffset()
    # Intl reports wall clocks in whole seconds, so sub-second LMT offsets truncate the same way.
    return 0 if off is None else off.days * 86400 + off.seconds


def to_wall(zone: ZoneInfo, t: int) -> int:
    """Wall-clock seconds of instant ``t`` in ``zone`` (croner's ``toTZ``)."""
    return t + _offset(zone, t)


def from_wall(zone: ZoneInfo, wall: int) -> int:
    """The instant croner's ``fromTZ`` picks for a local wall-clock reading.

    A faithful port of croner's guess-and-check, because its answers around DST changes
    are the reference (DECISIONS.md D-C2, plans-cron.md section 8.6):

    * the first guess applies the offset in force at the wall time read as UTC;
    * if that guess reads back correctly, croner still tries one hour earlier and prefers
      it when it reads back the same wall time: in a one-hour fall-back the repeated wall
      time therefore maps to its *first* occurrence. Lord Howe's half-hour fall-back is
      not caught by that one-hour probe, so there the guess (usually the *second*
      occurrence) stands;
    * otherwise a second guess uses the offset found at the first guess; if neither reads
      back (the wall time is inside a spring-forward gap) the *later* guess wins, which
      shifts the time forward by the size of the gap (02:30 -> 03:30).
    """
    off_in = _offset(zone, wall)
    guess = wall - off_in
    off_guess = _offset(zone, guess)
    if off_guess == off_in:
        earlier = guess - 3600
        if earlier + _offset(zone, earlier) == wall:
            return earlier
        return guess
    second = wall - off_guess
    if second + _offset(zone, second) == wall:
        return second
    return max(guess, second)
