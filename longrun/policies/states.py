"""The six task states of the original skill and what each one allows (§5.1)."""

from __future__ import annotations

ANALYZING = "analyzing"
EXECUTING = "executing"
WAITING = "waiting"
BLOCKED = "blocked"
HANDOFF = "handoff"
DONE = "done"

# In the announcement block's order (§3.1), with its labels.
STATES = (ANALYZING, EXECUTING, WAITING, BLOCKED, HANDOFF, DONE)
STATE_LABELS = {
    ANALYZING: "分析中",
    EXECUTING: "执行中",
    WAITING: "等待外部",
    BLOCKED: "被阻塞",
    HANDOFF: "需转派",
    DONE: "已完成",
}

# "Started" states: they need a real origin_session_key, hold the session's
# lock, and the watchdog checks their checkpoint and staleness.
ACTIVE_STATES = (ANALYZING, EXECUTING, WAITING)
# States that owe the user visible progress: the heartbeat and the keepalive.
PROGRESS_STATES = (ANALYZING, EXECUTING)
# States that release the lock; D-B16 archives them once they are old.
FINISHED_STATES = (BLOCKED, HANDOFF, DONE)

# Delivery outcomes a progress message can have (the original's VALID_DELIVERY_STATUS).
SENT = "sent"
UNKNOWN = "unknown"
FAILED = "failed"
DELIVERY_STATUSES = (SENT, UNKNOWN, FAILED)

# The tasks a session key's cap counts (D-B26): every state but done, the one a
# task leaves only by being reopened.
CAPPED_STATES = (ANALYZING, EXECUTING, WAITING, BLOCKED, HANDOFF)


def joins_session_cap(before: tuple[str, str] | None, key: str, state: str) -> bool:
    """Whether a task that was (session key, state) `before` (None: a new task) counts
    one more against `key`'s cap once it is in `state` with `key` (D-B26).

    A task without a session key belongs to no session and counts against none.
    """
    if not key or state not in CAPPED_STATES:
        return False
    return before is None or before[0] != key or before[1] not in CAPPED_STATES
