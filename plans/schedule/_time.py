"""Calendar arithmetic, IANA zone lookup and croner's wall-clock <-> instant mapping.

Everything here works on integer seconds: "instants" are Unix seconds, "walls" are
the local wall-clock reading of a zone encoded as if it were UTC (so a wall of
``2026-03-08T02:30`` is ``days_from_civil(2026, 3, 8) * 86400 + 2.5 * 3600``). Keeping
both as plain ints avoids ``datetime`` objects on the hot path of the evaluator.
"""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from zoneinfo import ZoneInfo

from xworkmate.lib.timezones import TimeZoneError, get_zone

from .errors import ScheduleError

__all__ = [
    "MAX_MS",
    "MIN_MS",
    "from_wall",
    "resolve_zone",
    "to_wall",
]

# The range of instants the engine accepts: years 1..9999, which is what Python's
# ``datetime`` (and therefore ``zoneinfo``) can convert.
MIN_MS = -62_135_596_800_000  # 0001-01-01T00:00:00.000Z
MAX_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z


@lru_cache(maxsize=256)
def resolve_zone(name: str) -> ZoneInfo:
    """The zone for an IANA name (matched case-insensitively, as Intl does).

    Raises :class:`ScheduleError` with croner 10's message for an unknown zone (it wraps
    Node's ``Invalid time zone specified: <name>``), the text OpenClaw users see.
    """
    try:
        return get_zone(name)
    except TimeZoneError as exc:
        raise ScheduleError(
            f"CronDate: Failed to convert date to timezone '{name}'. This may happen with "
            f"invalid timezone names or dates. Original error: toTZ: Invalid timezone '{name}' "
            "or date. Please provide a valid IANA timezone (e.g., 'America/New_York', "
            f"'Europe/Stockholm'). Original error: Invalid time zone specified: {name}"
        ) from exc


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
    are the reference (D-C2 in docs/decisions/plans.md):

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
