"""The longrun app's settings section: keys, defaults, checks and a typed reader (D-K16).

Adding a longrun setting touches only this file: xworkmate.wiring hands the
section to the kernel's loader, which checks it with every other section.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings

from xworkmate.config import Config, Key, Section
from xworkmate.config.kernel import UNKNOWN_COOLDOWN
from xworkmate.config.keys import (
    check_bool,
    check_duration,
    check_nonempty_str_list,
    check_time_zone,
    int_at_least,
)


@dataclass(frozen=True)
class LongrunConf:
    """[longrun]: the monitors' cadences and thresholds, the trigger phrases, cleanup."""

    trigger_phrases: tuple[str, ...]
    progress_every: timedelta
    idle: timedelta
    stale: timedelta
    unknown_cooldown: timedelta
    blocked_after_failures: int
    auto_resume: bool
    time_zone: str
    archive_after: timedelta
    max_live_tasks_per_session: int
    max_resumes_per_day: int
    escalate_after_recoveries: int


SECTION: Section[LongrunConf] = Section(
    "longrun",
    LongrunConf,
    {
        "trigger_phrases": Key(
            ("长任务模式", "进入长任务模式"),
            check_nonempty_str_list,
            doc="phrases that enter long-run mode",
        ),
        "progress_every": Key(
            timedelta(minutes=3), check_duration, doc="visible progress cadence"
        ),
        "idle": Key(timedelta(seconds=60), check_duration, doc="keepalive idle threshold"),
        "stale": Key(timedelta(minutes=10), check_duration, doc="watchdog stale window"),
        "unknown_cooldown": UNKNOWN_COOLDOWN,
        "blocked_after_failures": Key(
            3, int_at_least(1), doc="undelivered heartbeats before a task turns blocked"
        ),
        "auto_resume": Key(
            False,
            check_bool,
            doc="keepalive queues resume messages (else it only plans them)",
        ),
        "time_zone": Key(
            "Asia/Shanghai", check_time_zone, doc="zone of times without offset and of output"
        ),
        "archive_after": Key(
            timedelta(days=7),
            check_duration,
            doc="cleanup archives done, blocked and handoff tasks older than this (D-B16)",
        ),
        "max_live_tasks_per_session": Key(
            20,
            int_at_least(1),
            doc="tasks not done one session key may have; registering another is refused (D-B26)",
        ),
        "max_resumes_per_day": Key(
            24,
            int_at_least(1),
            doc="automatic resumes of a task in 24 h; past them it waits for a person (D-B29)",
        ),
        "escalate_after_recoveries": Key(
            3,
            int_at_least(1),
            doc="watchdog recoveries without visible progress before a person is told (D-B30)",
        ),
    },
)


def longrun_conf(config: Config | None = None) -> LongrunConf:
    """The section's values in ``config``, by default the running service's."""
    return SECTION.of(settings.XWORKMATE if config is None else config)
