"""IANA time zone names: the one resolver every part of the service uses (D-K7).

Names match case-insensitively ("asia/shanghai"), as JavaScript's Intl does,
because schedules written for OpenClaw are checked by Intl there; the zone
returned carries the canonical spelling in ``.key``.
"""

from __future__ import annotations

from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones


class TimeZoneError(ValueError):
    """A name that is not an IANA time zone."""


@lru_cache(maxsize=1)
def _canonical_names() -> dict[str, str]:
    return {name.lower(): name for name in available_timezones()}


@lru_cache(maxsize=512)
def get_zone(name: str) -> ZoneInfo:
    """Return the zone for ``name`` or raise TimeZoneError naming it."""
    canonical = _canonical_names().get(name.strip().lower()) if isinstance(name, str) else None
    if canonical is None:
        raise TimeZoneError(f"{name!r} is not an IANA time zone (like Asia/Shanghai)")
    try:
        return ZoneInfo(canonical)
    except (ZoneInfoNotFoundError, ValueError) as exc:  # the zone database changed under us
        raise TimeZoneError(f"{name!r} is not an IANA time zone (like Asia/Shanghai)") from exc
