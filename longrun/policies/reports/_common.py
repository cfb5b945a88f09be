"""What the reports share: a time on the wire, and an empty text as null."""

from __future__ import annotations

from datetime import datetime, tzinfo


def wire_time(moment: datetime | None, zone: tzinfo) -> str | None:
    if moment is None:
        return None
    return moment.astimezone(zone).isoformat(timespec="seconds")


def _opt(text: str) -> str | None:
    return text or None
