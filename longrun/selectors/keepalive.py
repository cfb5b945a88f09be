"""The keepalive's reads: its tick and the resume event of an idle task (§7.9)."""

from __future__ import annotations

from datetime import datetime, timedelta

from longrun.policies import reports
from longrun.policies.answers import Answer
from longrun.policies.timing import whole_second
from longrun.selectors._common import longrun_rules, task_named

# --- keepalive (§7.9) ----------------------------------------------------------------------------


def keepalive_tick(
    *, name: str, now: datetime, idle: timedelta | None = None, confined_to: str | None = None
) -> Answer:
    rules = longrun_rules()
    return reports.keepalive_tick(
        task_named(name, confined_to), whole_second(now), idle or rules.idle, rules.zone
    )


def keepalive_resume_event(
    *, name: str, now: datetime, idle: timedelta | None = None, confined_to: str | None = None
) -> Answer:
    """emit_keepalive_resume.py: the resume event of an idle task (generated, not sent)."""
    rules = longrun_rules()
    return reports.keepalive_event(
        task_named(name, confined_to), whole_second(now), idle or rules.idle, rules.zone
    )
