"""What the rules read: a task's stored facts and the configured thresholds.

The model (longrun.models.LongTask) has these attributes, so the services
pass rows as they are; the tests pass plain objects. Nothing here imports
Django.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from typing import Protocol

__all__ = ["Rules", "TaskFacts"]


class TaskFacts(Protocol):
    """A long task as §4.3 describes it; empty strings stand for the original's null."""

    @property
    def name(self) -> str: ...
    @property
    def session_label(self) -> str: ...
    @property
    def origin_session_key(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def goal(self) -> str: ...
    @property
    def done_when(self) -> str: ...
    @property
    def blocked_when(self) -> str: ...
    @property
    def boundary(self) -> str: ...
    @property
    def next_check(self) -> str: ...
    @property
    def next_check_at(self) -> datetime | None: ...
    @property
    def note(self) -> str: ...
    @property
    def progress_every(self) -> str: ...
    @property
    def progress_every_seconds(self) -> int: ...
    @property
    def last_progress_at(self) -> datetime | None: ...
    @property
    def last_progress_attempt_at(self) -> datetime | None: ...
    @property
    def last_progress_sent_at(self) -> datetime | None: ...
    @property
    def last_progress_unknown_at(self) -> datetime | None: ...
    @property
    def last_progress_delivery_status(self) -> str: ...
    @property
    def last_progress_delivery_id(self) -> str: ...
    @property
    def last_progress_message_hash(self) -> str: ...
    @property
    def last_progress_send_error(self) -> str: ...
    @property
    def last_visible_reply_at(self) -> datetime | None: ...
    @property
    def last_tool_result_at(self) -> datetime | None: ...
    @property
    def last_resume_at(self) -> datetime | None: ...
    @property
    def last_resume_reason(self) -> str: ...
    @property
    def last_resume_count(self) -> int: ...
    @property
    def updated_at(self) -> datetime: ...


@dataclass(frozen=True)
class Rules:
    """The `[longrun]` section of the config, typed."""

    progress_every: timedelta  # stored for a task created without one (D-B2)
    idle: timedelta  # keepalive: idle for longer than this resumes
    stale: timedelta  # watchdog: no update for this long recovers
    unknown_cooldown: timedelta  # no resend of the same heartbeat within it
    blocked_after_failures: int  # undelivered heartbeats in a row that block (D-B12)
    zone: tzinfo  # of a next_check without offset (D-B4) and of the times shown
    auto_resume: bool  # keepalive queues resumes, else plans them
    archive_after: timedelta  # age of a finished task cleanup archives (D-B16)
    max_live_tasks: int  # tasks not done one session key may have (D-B26)
    max_resumes_per_day: int = 24  # automatic resumes of a task in 24 h (D-B29)
    escalate_after_recoveries: int = 3  # recoveries in an episode before a person is told (D-B30)
