"""The plans app's settings section: keys, defaults, checks and a typed reader (D-K16).

Adding a plans setting touches only this file: xworkmate.wiring hands the
section to the kernel's loader, which checks it with every other section.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.conf import settings

from xworkmate.config import Config, Key, Section
from xworkmate.config.keys import (
    check_duration,
    check_nonempty_str_list,
    check_str,
    check_time_zone,
)


@dataclass(frozen=True)
class PlansConf:
    """[plans]: where PLAN.md files live, schedule zone and limits, confirmation phrases."""

    workspace: str
    time_zone: str
    min_every: timedelta
    confirmation_phrases: tuple[str, ...]
    confirmation_expiry: timedelta


# D-C25: an approval window longer than ten years is no window (and would overflow the
# date arithmetic of the expiry), one shorter than a minute expires before anyone reads.
_EXPIRY_MIN = timedelta(minutes=1)
_EXPIRY_MAX = timedelta(days=3650)


def _check_expiry(value: object) -> timedelta:
    expiry = check_duration(value)
    if not _EXPIRY_MIN <= expiry <= _EXPIRY_MAX:
        raise ValueError(f"must be between 1m and 87600h (ten years) (got {value!r})")
    return expiry


SECTION: Section[PlansConf] = Section(
    "plans",
    PlansConf,
    {
        "workspace": Key(
            "", check_str, doc="workspace of archives/<ARCHIVE_ID>/PLAN.md; empty = the first"
        ),
        "time_zone": Key("Asia/Shanghai", check_time_zone, doc="zone of schedules without tz"),
        "min_every": Key(
            timedelta(seconds=1), check_duration, doc="smallest everyMs a schedule may use"
        ),
        "confirmation_phrases": Key(
            (
                "确认",
                "确认创建",
                "确认执行",
                "可以创建定时任务了",
                "按这个建 Cron",
                "按这个建Cron",
                "同意",
                "就这样",
            ),
            check_nonempty_str_list,
            doc="messages that confirm a PLAN.md revision",
        ),
        "confirmation_expiry": Key(
            timedelta(days=7),
            _check_expiry,
            doc="a revision awaiting confirmation longer than this expires (D-C25)",
        ),
    },
)


def plans_conf(config: Config | None = None) -> PlansConf:
    """The section's values in ``config``, by default the running service's."""
    return SECTION.of(settings.XWORKMATE if config is None else config)


def plans_workspace(config: Config | None = None) -> Path:
    """The agent workspace whose archives/<ARCHIVE_ID>/PLAN.md the plans app keeps.

    The path inside it is the protocol's (§3.1), so a job's first instruction
    (`从路径 archives/<ARCHIVE_ID>/PLAN.md …`) names the file the agent reads.
    """
    config = settings.XWORKMATE if config is None else config
    root = plans_conf(config).workspace or config.workspace_roots[0]
    return Path(root).expanduser()
