from __future__ import annotations

from django.contrib import admin
from django.urls import URLPattern, URLResolver, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from plans.api import SchedulePreviewApi
from plans.views import schedule_preview_view
from xworkmate import api, health, views
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
    path("gateway", api.GatewayView.as_view(), name="gateway"),
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
