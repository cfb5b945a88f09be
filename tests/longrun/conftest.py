"""Fixtures of the long-run tests: the contract's clock and session keys, and a task factory.

§15's conventions: the clock is frozen at T0 (2026-04-02 12:00:00 in
Asia/Shanghai, the configured zone), K is the task's real session key and
K2 another one. Services are given `now` explicitly, so no test waits.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from longrun import services

T0 = datetime(2026, 4, 2, 4, 0, 0, tzinfo=UTC)
T0_TEXT = "2026-04-02T12:00:00+08:00"
K = "agent:main:telegram:dm:1001"
K2 = "agent:main:main"


# A task's required fields other than its name, state and key, as every test registers it.
FIELDS = {
    "session": "迁移会话",
    "goal": "确认表结构",
    "done_when": "迁移完成",
    "blocked_when": "缺权限",
    "boundary": "数据库",
    "next_check": "30m",
    "note": "读取迁移日志",
}
# The same, as `task_state.py set` flags.
SET_ARGS = tuple(
    part for name, value in FIELDS.items() for part in (f"--{name.replace('_', '-')}", value)
)
# An original .task-state.json with its quirks.
FIXTURE = Path(__file__).with_name("data") / "task-state-original.json"


def at(**delta: float) -> datetime:
    """T0 plus a delta: at(minutes=5)."""
    return T0 + timedelta(**delta)


def task_set(
    name: str = "A",
    *,
    state: str = "executing",
    key: str | None = K,
    now: datetime = T0,
    **fields: Any,
):
    """`task_state.py set` with every required argument; returns the Answer."""
    values: dict[str, Any] = {**FIELDS, "by": "test"} | fields
    if key is not None:
        values["origin_session_key"] = key
    return services.task_set(name=name, state=state, now=now, **values)


@dataclass
class Facts:
    """A long task as the pure rules read it (longrun.policies.facts.TaskFacts)."""

    name: str = "A"
    session_label: str = "迁移会话"
    origin_session_key: str = K
    state: str = "executing"
    goal: str = "确认表结构"
    done_when: str = "迁移完成"
    blocked_when: str = "缺权限"
    boundary: str = "数据库"
    next_check: str = ""
    next_check_at: datetime | None = None
    note: str = "读取迁移日志"
    progress_every: str = "3m"
    progress_every_seconds: int = 180
    last_progress_at: datetime | None = T0
    last_progress_attempt_at: datetime | None = None
    last_progress_sent_at: datetime | None = None
    last_progress_unknown_at: datetime | None = None
    last_progress_delivery_status: str = ""
    last_progress_delivery_id: str = ""
    last_progress_message_hash: str = ""
    last_progress_send_error: str = ""
    last_visible_reply_at: datetime | None = None
    last_tool_result_at: datetime | None = None
    last_resume_at: datetime | None = None
    last_resume_reason: str = ""
    last_resume_count: int = 0
    updated_at: datetime = T0

    def but(self, **changes: Any) -> Facts:
        return replace(self, **changes)


@pytest.fixture
def facts() -> Facts:
    return Facts()


# --- the outbox, driven by hand ------------------------------------------------------------


def push_channels(settings: Any) -> None:
    """Heartbeats to a webhook (it de-duplicates), resumes and recoveries to the OpenClaw CLI.

    No request is ever made: the tests answer for the channel (`answer`).
    """
    from tests.delivery.conftest import use_channels
    from xworkmate.config import DeliveryChannel

    use_channels(
        settings,
        DeliveryChannel(name="hook", kind="webhook", url="http://127.0.0.1:9/hook"),
        DeliveryChannel(name="cli", kind="openclaw"),
        routes={"longrun.progress": "hook", "longrun.resume": "cli", "longrun.recovery": "cli"},
    )


def answer(outcome: str, detail: str = "", *, now: datetime, retry: bool = False) -> list[Any]:
    """Claim what the outbox would send now and record `outcome` as the channel's answer.

    `retry`: the messages due again (a failed one after its back-off), not the new ones.
    """
    from xworkmate.delivery.channels.base import Outcome, Result
    from xworkmate.delivery.models import Message
    from xworkmate.delivery.services import deliveries_step, sends_begin

    started = sends_begin(new=not retry, now=now, limit=100, by="test")
    result = Result(Outcome(outcome), detail)
    deliveries_step(finished=[(one, result) for one in started], start=[], renew=[], now=now,
                    by="test")
    ids = [one.envelope.message_id for one in started]
    by_id = Message.objects.in_bulk(ids)
    return [by_id[pk] for pk in ids]


def acknowledge_all(session_key: str, *, now: datetime) -> list[Any]:
    """The bridge fetches what waits for `session_key` on the record channel and acknowledges it."""
    from xworkmate.delivery.selectors import pending_for_session
    from xworkmate.delivery.services import message_acknowledge

    pending = list(pending_for_session(session_key, limit=100))
    for message in pending:
        message_acknowledge(message=message, by="bridge", now=now)
    return pending
