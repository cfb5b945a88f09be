"""5-field cron expressions as Celery beat's `crontab`, which runs the periodic jobs."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from celery.schedules import crontab


def beat_crontab(expr: str, *, nowfun: Callable[[], datetime] | None = None) -> crontab:
    """Parse `minute hour day-of-month month day-of-week`; ValueError names the problem."""
    fields = expr.split()
    if len(fields) != 5:
        raise ValueError(
            f"must have 5 fields (minute hour day-of-month month day-of-week), got {len(fields)}"
        )
    minute, hour, dom, month, dow = fields
    options: dict[str, Any] = {} if nowfun is None else {"nowfun": nowfun}
    try:
        return crontab(
            minute=minute, hour=hour, day_of_month=dom, month_of_year=month, day_of_week=dow,
            **options,
        )
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"is not a valid cron expression: {exc}") from exc
