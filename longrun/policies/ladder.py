"""The escalation ladder of a long task (D-B30): which rung comes next, given its facts. Pure.

Four rungs, each what a monitor did for a task that went quiet: `nudge` (its
visible progress was due: the heartbeat went out), `resume` (idle: the
keepalive planned or queued its resume), `recover` (overdue: the watchdog
queued its recovery message) and `tell` (a person is told on the escalation
route). An episode runs from the task's last visible progress to the next;
a person is told at most once in it, when the task turned blocked after
undelivered heartbeats, or when the watchdog has recovered it
`recoveries_before_telling` times in it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from longrun.policies.facts import TaskFacts

__all__ = [
    "BLOCKED_BY_MISSES",
    "NUDGE",
    "RECOVER",
    "RESUME",
    "RUNGS",
    "TELL",
    "Episode",
    "Step",
    "episode_start",
    "escalation_message",
    "next_steps",
]

NUDGE = "nudge"
RESUME = "resume"
RECOVER = "recover"
TELL = "tell"
RUNGS = (NUDGE, RESUME, RECOVER, TELL)
# Not a rung: what the delivery bookkeeping did (the task turned blocked after
# undelivered heartbeats), after which the ladder may tell a person.
BLOCKED_BY_MISSES = "blocked_by_misses"


@dataclass(frozen=True)
class Episode:
    """What the ladder recorded since the task's last visible progress."""

    recoveries: int  # recover rungs
    told: bool  # a tell rung


@dataclass(frozen=True)
class Step:
    rung: str
    reason: str


def episode_start(task: TaskFacts, created_at: datetime) -> datetime:
    """Where the episode begins: the last visible progress (the agent's touch-progress or a
    confirmed heartbeat, as the task board counts it), or the task's creation."""
    return task.last_progress_at or created_at


def next_steps(
    done: str,
    reason: str,
    episode: Episode,
    *,
    misses: int,
    recoveries_before_telling: int,
) -> tuple[Step, ...]:
    """The rungs to record after `done` (a rung a monitor just took, or BLOCKED_BY_MISSES):
    that rung itself, then `tell` if this episode has earned it and has not had it."""
    steps: list[Step] = []
    if done in (NUDGE, RESUME, RECOVER):
        steps.append(Step(done, reason))
    if episode.told:
        return tuple(steps)
    recoveries = episode.recoveries + (1 if done == RECOVER else 0)
    if done == BLOCKED_BY_MISSES:
        steps.append(
            Step(TELL, f"blocked after {misses} undelivered heartbeats in a row: {reason}")
        )
    elif done == RECOVER and recoveries >= recoveries_before_telling:
        steps.append(
            Step(
                TELL,
                f"recovered {recoveries} times without visible progress in between "
                f"(last: {reason})",
            )
        )
    return tuple(steps)


def escalation_message(task: TaskFacts, why: str, *, since: str, page: str) -> str:
    """What the person reads on the escalation route (Chinese first, as the skill speaks)."""
    return (
        f"长任务需要人工介入：{task.name}\n"
        f"原因：{why}\n"
        f"当前状态：{task.state}\n"
        f"目标会话：{task.origin_session_key}\n"
        f"最近一次可见进度：{since}\n"
        f"请查看任务页面（{page}），处理后重新设置任务状态。\n"
        f"A long task needs a person: {task.name} ({why}). See {page}."
    )
