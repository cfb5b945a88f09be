"""Fixtures of the gateway tests: a workspace root of their own and call helpers."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.models import NativeTask, SessionEntry, SessionMapping, TaskRun
from tests.conftest import ApiClient, configure


@pytest.fixture
def workspace(tmp_path: Path, settings: Any) -> Path:
    """A fresh workspace, the only configured workspace root (so the default one)."""
    root = tmp_path / "ws"
    root.mkdir()
    real = Path(os.path.realpath(root))
    configure(settings, "workspace", roots=(str(real),))
    return real


@pytest.fixture
def bridge(make_client: Callable[..., ApiClient], workspace: Path) -> ApiClient:
    """The bridge's key: gateway:write, not bound to any run."""
    return make_client("gateway:write", name="bridge")


def call(client: ApiClient, method: str, params: dict[str, Any] | None = None) -> tuple[int, Any]:
    response = client.post(f"/gateway/{method}", params or {})
    return response.status_code, response.json()


def prepare(client: ApiClient, **params: Any) -> dict[str, Any]:
    status, body = call(client, "xworkmate.session.prepare", params)
    assert status == 200, body
    payload: dict[str, Any] = body["payload"]
    return payload


def tasks_get(client: ApiClient, **params: Any) -> dict[str, Any]:
    status, body = call(client, "xworkmate.tasks.get", params)
    assert status == 200, body
    assert body["ok"] is True
    payload: dict[str, Any] = body["payload"]
    return payload


def agent_end(client: ApiClient, event: dict[str, Any], ctx: dict[str, Any] | None = None) -> Any:
    response = client.post("/api/gateway/hooks/agent_end", {"event": event, "ctx": ctx or {}})
    assert response.status_code == 200, response.content
    return response.json()


def session_start(client: ApiClient, event: dict[str, Any]) -> Any:
    response = client.post("/api/gateway/hooks/session_start", {"event": event})
    assert response.status_code == 200, response.content
    return response.json()


def native(client: ApiClient, session_key: str, **task: Any) -> Any:
    return client.post("/api/gateway/native-tasks", {"sessionKey": session_key, "task": task})


def db_state() -> dict[str, list[tuple[Any, ...]]]:
    """Every gateway row, to prove a refused call wrote nothing."""
    return {
        "entries": list(SessionEntry.objects.order_by("id").values_list()),
        "mappings": list(SessionMapping.objects.order_by("id").values_list()),
        "runs": list(TaskRun.objects.order_by("id").values_list()),
        "native": list(NativeTask.objects.order_by("id").values_list()),
    }


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))
