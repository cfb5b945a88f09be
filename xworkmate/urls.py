from __future__ import annotations

from django.contrib import admin
from django.urls import URLPattern, URLResolver, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from artifacts.api import ArtifactDownloadApi, ArtifactToolApi
from plans.api import SchedulePreviewApi
from plans.views import schedule_preview_view
from xworkmate import api, health, hooks_api, views
from xworkmate.gateway import registered_methods

urlpatterns: list[URLPattern | URLResolver] = [
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
    path("healthz", health.healthz, name="healthz"),
    path("admin/language/", views.set_language, name="xworkmate-set-language"),
    path(
        "admin/plans/schedule-preview/",
        admin.site.admin_view(schedule_preview_view),
        name="plans-schedule-preview",
    ),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path(
        "api/plans/schedule-preview",
        SchedulePreviewApi.as_view(),
        name="plans-schedule-preview-api",
    ),
    path("api/artifacts/download", ArtifactDownloadApi.as_view(), name="artifacts-download"),
    path("api/artifacts/tool", ArtifactToolApi.as_view(), name="artifacts-tool"),
    path("gateway", api.GatewayView.as_view(), name="gateway"),
    path("api/ping", hooks_api.PingView.as_view(), name="ping"),
    path(
        "api/gateway/hooks/session_start",
        hooks_api.SessionStartHookView.as_view(),
        name="hook-session-start",
    ),
    path(
        "api/gateway/hooks/agent_end", hooks_api.AgentEndHookView.as_view(), name="hook-agent-end"
    ),
    path(
        "api/gateway/native-tasks",
        hooks_api.NativeTaskUpsertView.as_view(),
        name="native-task-upsert",
    ),
]

# One documented path per registered method (the apps register them in
# ready(), before the URLconf loads), then the generic one that answers 404
# for unknown names and serves methods registered later (tests).
urlpatterns += [
    path(f"gateway/{m.name}", api.method_view(m).as_view(), name=f"gateway-{m.name}")
    for m in registered_methods()
]
urlpatterns.append(
    path("gateway/<path:method>", api.GatewayMethodView.as_view(), name="gateway-method")
)
