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
