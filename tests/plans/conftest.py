"""Fixtures of the plans tests: a workspace for PLAN.md files, a proposal, a clock."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from plans.models import Entry
from plans.services import Proposal, plan_propose
from tests.conftest import configure

SESSION = "agent:ops:user:u-1:direct:chat-1"
ARCHIVE_ID = "chat-1"
NOW = datetime(2026, 3, 10, 0, 30, tzinfo=UTC)


@pytest.fixture
def workspace(settings: Any, tmp_path: Path) -> Path:
    """An agent workspace of its own for the plans app (plans.workspace)."""
    root = tmp_path / "workspace"
    root.mkdir()
    configure(settings, "plans", workspace=str(root))
    return root


def proposal(**changes: Any) -> Proposal:
    values: dict[str, Any] = {
        "task_name": "每日库存巡检日报",
        "persona": "库存管理助理",
        "objective": "每天发现库存异常，体现 SOUL.md 的主动负责",
        "result": "每天 9 点前生成日报并归档",
        "steps": ("每天 09:00 读取库存表并生成日报；失败时记录原因并重试一次",),
        "schedule": {"kind": "cron", "expr": "0 9 * * *", "tz": "Asia/Shanghai"},
    }
    values.update(changes)
    return Proposal(**values)


@pytest.fixture
def propose(db: None, workspace: Path) -> Callable[..., Entry]:
    def make(*, session: str = SESSION, turn: str = "turn-1", now: datetime = NOW, **changes: Any):
        return plan_propose(
            session_key=session,
            proposal=proposal(**changes),
            turn_id=turn,
            written_by="test",
            now=now,
        )

    return make


def later(minutes: int) -> datetime:
    return NOW + timedelta(minutes=minutes)


@pytest.fixture
def reviewer(db: None) -> User:
    """The person who reviews plans in the admin (a superuser)."""
    return User.objects.create_superuser("reviewer", "", "pw-reviewer-1")


@pytest.fixture
def browser(reviewer: User) -> Client:
    """A signed-in reviewer whose posts must carry the CSRF token, as a browser's do."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(reviewer)
    return client
