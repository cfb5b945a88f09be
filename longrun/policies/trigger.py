"""Whether a user message enters long-run mode (§2, D-B1).

Only an explicit phrase does (`longrun.trigger_phrases`: `长任务模式`,
`进入长任务模式`), and only as a request: a phrase after a negation or an
exit word in its clause (`不要进入长任务模式`, `退出长任务模式`) or in a
question (`什么是长任务模式？`, `长任务模式是什么`) is a mention, not a
request. Nothing else ever triggers (`继续`, `接着来`, `一直做，不停` …): inside
an active long task those words only mean "go on".
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["is_trigger"]

# Words that, before the phrase in its clause, turn it into a refusal or an exit.
_NEGATIONS = (
    "不", "别", "勿", "没", "未", "无需", "无须", "甭", "退出", "关闭", "结束", "停止", "取消",
    "离开",
)  # fmt: skip
# Words that make the clause a question about the phrase rather than a request.
_QUESTION_WORDS = ("什么", "吗", "怎么", "如何", "为何", "为什么", "是否", "能否", "可否", "啥")
# A clause ends at punctuation or a line break; the terminator is kept (a "？" matters).
_CLAUSES = re.compile(r"([^，,。.！!？?；;:：\n]*)([，,。.！!？?；;:：\n]?)")


def is_trigger(message: str, phrases: Iterable[str]) -> bool:
    """True when some clause of `message` asks for long-run mode with one of `phrases`."""
    # Longest first: in `进入长任务模式` the words before `长任务模式` are not a prefix.
    ordered = sorted({p for p in phrases if p}, key=len, reverse=True)
    for clause, terminator in _CLAUSES.findall(message):
        found = [clause.find(phrase) for phrase in ordered if phrase in clause]
        if not found:
            continue
        before = clause[: min(found)]
        if any(word in before for word in _NEGATIONS):
            continue
        if terminator in ("？", "?") or any(word in clause for word in _QUESTION_WORDS):
            continue
        return True
    return False
