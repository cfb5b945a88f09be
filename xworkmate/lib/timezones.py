"""IANA time zone names, checked against the zone database the process uses."""

from __future__ import annotations

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


class TimeZoneError(ValueError):
    """A name that is not an IANA time zone."""


def get_zone(name: str) -> ZoneInfo:
    """Return the zone for ``name`` or raise TimeZoneError naming it."""
    # ZoneInfo also raises ValueError/TypeError for names like "../etc" or "";
    # all of them mean the same thing to a caller: not a zone.
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError) as exc:
        raise TimeZoneError(f"{name!r} is not an IANA time zone (like Asia/Shanghai)") from exc
