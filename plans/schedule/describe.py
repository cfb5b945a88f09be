"""Human-readable schedule descriptions in Chinese and English for the admin.

Only the common shapes get prose (every N minutes/hours, daily, weekdays, days of the
week, days of the month, yearly dates, ``every`` intervals, one-shot ``at``); anything
more exotic falls back to the raw expression, which is always correct.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from xworkmate.lib.jstime import ms_to_iso

from ._cron_parser import _NICKNAMES
from .cron import parse_cron
from .engine import parse_at_ms
from .errors import ScheduleError

__all__ = ["describe_schedule"]

_DAY_NAMES = {"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}
_MONTH_NAMES = {
    name: number
    for number, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
        start=1,
    )
}
_EN_DAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_ZH_DAYS = ("周日", "周一", "周二", "周三", "周四", "周五", "周六")
_EN_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_NUMBER = re.compile(r"[0-9]{1,2}")
_STEP = re.compile(r"\*/([0-9]{1,2})")


def _values(field: str, names: Mapping[str, int], low: int, high: int) -> list[int] | None:
    """Plain numbers, names, ranges and lists; None for anything else (steps, L, #, W, ?)."""
    result: list[int] = []
    for piece in field.lower().split(","):
        bounds = piece.split("-")
        if len(bounds) > 2:
            return None
        numbers: list[int] = []
        for bound in bounds:
            if bound in names:
                numbers.append(names[bound])
            elif _NUMBER.fullmatch(bound):
                numbers.append(int(bound))
            else:
                return None
        start, end = numbers[0], numbers[-1]
        if names is _DAY_NAMES and end == 0 and start > 0:
            end = 7  # "FRI-SUN": Sunday closes a range as 7, as in croner
        if not low <= start <= end <= high:
            return None
        result.extend(range(start, end + 1))
    if names is _DAY_NAMES:
        result = [value % 7 for value in result]  # 7 is Sunday too
    return sorted(set(result))


def _join(items: list[str], lang: str) -> str:
    if lang == "zh":
        return "、".join(items)
    if len(items) <= 2:
        return " and ".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _clock(hour: int, minute: int, second: int) -> str:
    return f"{hour:02d}:{minute:02d}" + (f":{second:02d}" if second else "")


def _describe_cron(expr: str, lang: str) -> str | None:
    text = _NICKNAMES.get(expr.strip().lower(), expr)
    fields = text.split()
    if len(fields) == 7:
        if fields[6] != "*":
            return None
        fields = fields[:6]
    if len(fields) == 6:
        if not _NUMBER.fullmatch(fields[0]):
            return None
        second = int(fields[0])
        fields = fields[1:]
    else:
        second = 0
    if len(fields) != 5:
        return None
    minute_f, hour_f, dom_f, month_f, dow_f = fields
    zh = lang == "zh"

    # Interval shapes: "*/N * * * *", "* * * * *", "M */N * * *", "M * * * *".
    if (dom_f, month_f, dow_f) == ("*", "*", "*") and second == 0:
        step = _STEP.fullmatch(minute_f)
        if hour_f == "*" and minute_f == "*":
            return "每分钟" if zh else "Every minute"
        if hour_f == "*" and step:
            n = int(step.group(1))
            return (
                (f"每 {n} 分钟" if zh else f"Every {n} minutes")
                if n > 1
                else ("每分钟" if zh else "Every minute")
            )
        if _NUMBER.fullmatch(minute_f):
            minute = int(minute_f)
            hour_step = _STEP.fullmatch(hour_f)
            n = int(hour_step.group(1)) if hour_step else 1
            if hour_f != "*" and n < 2:
                n = 0
            if n == 1:
                if minute == 0:
                    return "每小时整点" if zh else "Every hour on the hour"
                return f"每小时第 {minute} 分" if zh else f"Every hour at minute {minute:02d}"
            if n > 1:
                if minute == 0:
                    return f"每 {n} 小时整点" if zh else f"Every {n} hours on the hour"
                return (
                    f"每 {n} 小时的第 {minute} 分"
                    if zh
                    else f"Every {n} hours at minute {minute:02d}"
                )

    # Fixed times of day: minute and hour plain numbers (a small list of hours is fine).
    minutes = _values(minute_f, {}, 0, 59)
    hours = _values(hour_f, {}, 0, 23)
    if not minutes or not hours or len(minutes) * len(hours) > 4:
        return None
    times = _join([_clock(h, m, second) for h in hours for m in minutes], lang)

    months = None if month_f == "*" else _values(month_f, _MONTH_NAMES, 1, 12)
    if month_f != "*" and not months:
        return None
    if dow_f != "*" and dom_f != "*":
        return None  # croner ORs the two; say it with the raw expression instead
    if dow_f != "*":
        days = _values(dow_f, _DAY_NAMES, 0, 7)
        if not days or months is not None:
            return None
        if days == [1, 2, 3, 4, 5]:
            return f"工作日 {times}" if zh else f"Every weekday at {times}"
        if days == [0, 6]:
            return f"周末 {times}" if zh else f"Every weekend day at {times}"
        days.sort(key=lambda day: (day + 6) % 7)  # Monday first, Sunday last
        if zh:
            return "每" + _join([_ZH_DAYS[d] for d in days], lang) + f" {times}"
        return "Every " + _join([_EN_DAYS[d] for d in days], lang) + f" at {times}"
    if dom_f == "*":
        if months is not None:
            return None
        return f"每天 {times}" if zh else f"Every day at {times}"
    if dom_f.upper() == "L" and months is None:
        return f"每月最后一天 {times}" if zh else f"On the last day of every month at {times}"
    doms = _values(dom_f, {}, 1, 31)
    if not doms or len(doms) > 4:
        return None
    if months is None:
        if zh:
            return "每月 " + _join([f"{d} 日" for d in doms], lang) + f" {times}"
        return "On day " + _join([str(d) for d in doms], lang) + f" of every month at {times}"
    if len(months) == 1 and len(doms) == 1:
        if zh:
            return f"每年 {months[0]} 月 {doms[0]} 日 {times}"
        return f"Every year on {_EN_MONTHS[months[0] - 1]} {doms[0]} at {times}"
    return None


def _duration(ms: int, lang: str) -> str:
    units = (
        (86_400_000, "天", "day"),
        (3_600_000, "小时", "hour"),
        (60_000, "分钟", "minute"),
        (1000, "秒", "second"),
    )
    for size, zh_unit, en_unit in units:
        if ms >= size and ms % size == 0:
            n = ms // size
            if lang == "zh":
                return f"每 {n} {zh_unit}" if n > 1 else f"每{zh_unit}"
            return f"Every {n} {en_unit}s" if n > 1 else f"Every {en_unit}"
    return f"每 {ms} 毫秒" if lang == "zh" else f"Every {ms} ms"


def describe_schedule(
    schedule: Mapping[str, object], *, lang: str, host_tz: str | None = None
) -> str:
    """A short description, e.g. ``每天 02:30 (America/New_York)`` or
    ``Every day at 02:30 (America/New_York)``.

    ``lang`` is ``"zh"`` or ``"en"``. A cron schedule without ``tz`` names ``host_tz`` when
    given. Unusual cron expressions are shown as they are (``0 0 1,15,L * *``).
    Raises :class:`ScheduleError` for an unknown kind or an invalid expression or ``at``.
    """
    if lang not in ("zh", "en"):
        raise ValueError(f'lang must be "zh" or "en" (got {lang!r})')
    kind = schedule.get("kind")
    kind = kind.strip().lower() if isinstance(kind, str) else kind
    if kind == "at":
        iso = ms_to_iso(parse_at_ms(schedule.get("at")))
        return f"一次性 {iso}" if lang == "zh" else f"Once at {iso}"
    if kind == "every":
        every = schedule.get("everyMs")
        if not isinstance(every, int | float) or isinstance(every, bool) or every < 1:
            raise ScheduleError(f"invalid schedule.everyMs: expected a number (got {every!r})")
        text = _duration(int(every), lang)
        anchor = schedule.get("anchorMs")
        if isinstance(anchor, int | float) and not isinstance(anchor, bool):
            since = ms_to_iso(int(anchor))
            text += f" 自 {since} 起" if lang == "zh" else f" from {since}"
        return text
    if kind == "cron":
        expr = schedule.get("expr")
        if not isinstance(expr, str) or not expr.strip():
            raise ScheduleError("invalid cron schedule: expr is required")
        expr = expr.strip()
        parse_cron(expr)  # invalid expressions are errors, not descriptions
        text = _describe_cron(expr, lang) or expr
        tz = schedule.get("tz")
        zone = tz.strip() if isinstance(tz, str) and tz.strip() else host_tz
        return f"{text} ({zone})" if zone else text
    raise ScheduleError(f'invalid schedule.kind: expected "at", "every" or "cron" (got {kind!r})')
