"""The schedule-plan skill's reading of user messages (§2.2, §2.3): pure rules."""

from __future__ import annotations

import re

# --- the vague-request rule (§2.2) -------------------------------------------------------

OTHER_LINE = "其他：[由用户补充]"
_TRIGGERS = ("定时计划", "定时任务", "提醒", "自动化安排", "周期任务", "延迟任务", "cron")
_BASELINE = re.compile(r"(预设)?基准方案|默认方案")
# "A. …", "B、…", "1) …", "（2）…", "选项一：…" at the start of a line.
_OPTION = re.compile(
    r"\s*(?:[-*•]\s*)?(?:[（(]?(?:[A-Da-d]|[1-9]|[一二三四])[.、)）:：]|选项\s*[A-Da-d1-9一二三四])\s*\S"
)


def is_schedule_request(message: str) -> bool:
    """Whether a user message opens the schedule-plan protocol (§2.3 transition 1)."""
    text = message.casefold() if isinstance(message, str) else ""
    return any(trigger in text for trigger in _TRIGGERS)


def clarification_problems(reply: str) -> list[str]:
    """What a reply to a vague request lacks (§2.2, F8); [] when it keeps the rule.

    It must give one default baseline proposal (预设基准方案), 2-3 structured
    options, and end with the literal line `其他：[由用户补充]`; an open question
    alone is the "开放式命题作文" the skill forbids.
    """
    lines = [line.strip() for line in (reply or "").splitlines() if line.strip()]
    problems: list[str] = []
    options = [line for line in lines[:-1] if _OPTION.match(line) and OTHER_LINE not in line]
    # Exactly one baseline (an option that names the baseline is still an option):
    # two baselines leave the user choosing between proposals, which the rule forbids.
    baselines = [line for line in lines if _BASELINE.search(line) and line not in options]
    if not baselines:
        problems.append("预设基准方案: the reply must give one default baseline proposal")
    elif len(baselines) > 1:
        problems.append(
            "预设基准方案: the reply must give exactly one default baseline proposal "
            f"(found {len(baselines)})"
        )
    if not 2 <= len(options) <= 3:
        problems.append(
            "2-3 个结构化选项: the reply must offer 2 to 3 structured options "
            f"(found {len(options)})"
        )
    # The skill's line itself, nothing before or after it on that line ("最后追加").
    if not lines or lines[-1] != OTHER_LINE:
        problems.append(
            f"最后追加 {OTHER_LINE}: the reply's last line must be exactly {OTHER_LINE}"
        )
    return problems
