"""URLs of the gateway app: the bridge's hooks and the native task records."""

from __future__ import annotations

from django.urls import URLPattern, path

from gateway import api

urlpatterns: list[URLPattern] = [
    path(
        "api/gateway/hooks/session_start",
        api.SessionStartHookView.as_view(),
        name="hook-session-start",
    ),
    path(
        "api/gateway/hooks/agent_end", api.AgentEndHookView.as_view(), name="hook-agent-end"
    ),
    path(
        "api/gateway/native-tasks",
        api.NativeTaskUpsertView.as_view(),
        name="native-task-upsert",
    ),
]
