from __future__ import annotations

from django.contrib import admin
from django.urls import URLPattern, URLResolver, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from xworkmate import api, health, views
from xworkmate.gateway import registered_methods

urlpatterns: list[URLPattern | URLResolver] = [
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
    path("healthz", health.healthz, name="healthz"),
    path("admin/language/", views.set_language, name="xworkmate-set-language"),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
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
