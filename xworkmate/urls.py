"""The root URLconf: the kernel's own URLs, then each app's `urls.py` (D-K1).

This module and xworkmate.settings / xworkmate.celery are the only kernel
modules that name the apps; everything else in the kernel knows none of them.
"""

from __future__ import annotations

from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path
from django.views.generic import RedirectView

from xworkmate import api_errors, dispatch, health, metrics, views
from xworkmate.api_docs import SchemaView, api_docs
from xworkmate.methods import registered_methods

urlpatterns: list[URLPattern | URLResolver] = [
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
    path("healthz", health.healthz, name="healthz"),
    path("metrics", metrics.MetricsView.as_view(), name="metrics"),
    path("admin/language/", views.set_language, name="xworkmate-set-language"),
    # The apps' pages, some under /admin/, come before the admin's catch-all.
    path("", include("xworkmate.delivery.urls")),
    path("", include("gateway.urls")),
    path("", include("artifacts.urls")),
    path("", include("plans.urls")),
    path("", include("longrun.urls")),
    path("admin/", admin.site.urls),
    path("api/schema/", SchemaView.as_view(), name="schema"),
    path("api/docs/", api_docs, name="api-docs"),
    path("api/ping", dispatch.PingView.as_view(), name="ping"),
    # Documented with the methods the apps registered in ready(), before this loads.
    path("gateway", dispatch.envelope_view(registered_methods()).as_view(), name="gateway"),
]

# One documented path per registered method (the apps register them in
# ready(), before the URLconf loads), then the generic one that answers 404
# for unknown names and serves methods registered later (tests).
urlpatterns += [
    path(f"gateway/{m.name}", dispatch.method_view(m).as_view(), name=f"gateway-{m.name}")
    for m in registered_methods()
]
urlpatterns.append(
    path("gateway/<path:method>", dispatch.GatewayMethodView.as_view(), name="gateway-method")
)

# Under /api/ and /gateway these answer the API's JSON error shape, elsewhere
# Django's pages (with DEBUG on, Django shows its debug pages instead).
handler400 = api_errors.handler400
handler403 = api_errors.handler403
handler404 = api_errors.handler404
handler500 = api_errors.handler500
