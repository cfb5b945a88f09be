"""Human-readable descriptions for the admin (issue 5, requirement 4)."""

from __future__ import annotations

from typing import Any

import pytest

from plans.schedule import ScheduleError, describe_schedule


@pytest.mark.parametrize(
    ("schedule", "zh", "en"),
    [
        (
            {"kind": "cron", "expr": "30 2 * * *", "tz": "America/New_York"},
            "每天 02:30 (America/New_York)",
            "Every day at 02:30 (America/New_York)",
        ),
        (
            {"kind": "cron", "expr": "30 8 * * 1-5", "tz": "Asia/Shanghai"},
            "工作日 08:30 (Asia/Shanghai)",
            "Every weekday at 08:30 (Asia/Shanghai)",
        ),
        (
            {"kind": "cron", "expr": "0 9 * * MON,wed", "tz": "UTC"},
            "每周一、周三 09:00 (UTC)",
            "Every Monday and Wednesday at 09:00 (UTC)",
        ),
        (
            {"kind": "cron", "expr": "0 9 * * 5-7", "tz": "UTC"},
            "每周五、周六、周日 09:00 (UTC)",
            "Every Friday, Saturday and Sunday at 09:00 (UTC)",
        ),
        (
            {"kind": "cron", "expr": "0 0 1 * *", "tz": "UTC"},
            "每月 1 日 00:00 (UTC)",
            "On day 1 of every month at 00:00 (UTC)",
        ),
        (
            {"kind": "cron", "expr": "0 0 L * *", "tz": "UTC"},
            "每月最后一天 00:00 (UTC)",
            "On the last day of every month at 00:00 (UTC)",
        ),
        (
            {"kind": "cron", "expr": "@yearly", "tz": "UTC"},
            "每年 1 月 1 日 00:00 (UTC)",
            "Every year on January 1 at 00:00 (UTC)",
        ),
        (
            {"kind": "cron", "expr": "*/15 * * * *", "tz": "UTC"},
            "每 15 分钟 (UTC)",
            "Every 15 minutes (UTC)",
        ),
        (
            {"kind": "cron", "expr": "0 */2 * * *", "tz": "UTC"},
            "每 2 小时整点 (UTC)",
            "Every 2 hours on the hour (UTC)",
        ),
        (
            {"kind": "cron", "expr": "5 * * * *", "tz": "UTC"},
            "每小时第 5 分 (UTC)",
            "Every hour at minute 05 (UTC)",
        ),
        (
            {"kind": "cron", "expr": "0 30 9 * * *", "tz": "UTC"},
            "每天 09:30 (UTC)",
            "Every day at 09:30 (UTC)",
        ),
        (
            {"kind": "cron", "expr": "0 9,18 * * *", "tz": "UTC"},
            "每天 09:00、18:00 (UTC)",
            "Every day at 09:00 and 18:00 (UTC)",
        ),
        (  # exotic: the raw expression
            {"kind": "cron", "expr": "0 0 1,15,L * *", "tz": "UTC"},
            "0 0 1,15,L * * (UTC)",
            "0 0 1,15,L * * (UTC)",
        ),
        (  # day-of-month OR day-of-week is croner-specific: raw expression
            {"kind": "cron", "expr": "0 9 15 * 1", "tz": "UTC"},
            "0 9 15 * 1 (UTC)",
            "0 9 15 * 1 (UTC)",
        ),
        (
            {"kind": "every", "everyMs": 3_600_000, "anchorMs": 1_773_100_800_000},
            "每小时 自 2026-03-10T00:00:00.000Z 起",
            "Every hour from 2026-03-10T00:00:00.000Z",
        ),
        ({"kind": "every", "everyMs": 90_000}, "每 90 秒", "Every 90 seconds"),
        ({"kind": "every", "everyMs": 2 * 86_400_000}, "每 2 天", "Every 2 days"),
        (
            {"kind": "at", "at": "2026-12-01T09:00:00+08:00"},
            "一次性 2026-12-01T01:00:00.000Z",
            "Once at 2026-12-01T01:00:00.000Z",
        ),
    ],
)
def test_describe_schedule(schedule: dict[str, Any], zh: str, en: str) -> None:
    assert describe_schedule(schedule, lang="zh") == zh
    assert describe_schedule(schedule, lang="en") == en


def test_describe_uses_host_zone_when_tz_is_missing() -> None:
    schedule = {"kind": "cron", "expr": "0 9 * * *"}
    assert describe_schedule(schedule, lang="en", host_tz="Asia/Shanghai") == (
        "Every day at 09:00 (Asia/Shanghai)"
    )
    assert describe_schedule(schedule, lang="zh") == "每天 09:00"


def test_describe_rejects_invalid_schedules_and_languages() -> None:
    with pytest.raises(ScheduleError, match="Invalid value for minute: 61"):
        describe_schedule({"kind": "cron", "expr": "61 * * * *"}, lang="en")
    with pytest.raises(ScheduleError, match=r"Invalid schedule\.at"):
        describe_schedule({"kind": "at", "at": "2026-02-30"}, lang="zh")
    with pytest.raises(ValueError, match="lang"):
        describe_schedule({"kind": "cron", "expr": "0 9 * * *"}, lang="fr")
