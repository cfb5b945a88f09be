"""The OpenAPI schema (`/api/schema/`) and docs page (`/api/docs/`): for an API key,
or for staff signed in to the admin.

A person who opens the docs page in a browser without a staff session is sent
to the admin login and, once signed in, back to the page; a call with an
`Authorization` header is left to the page's own API-key check. The refusals
of both are the API's JSON error shape, like every other API answer, not
YAML or HTML in the format of the document they would have served.
"""

from __future__ import annotations

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponseBase
from django.urls import reverse
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from xworkmate.auth import Caller

__all__ = ["SchemaView", "api_docs"]


class _JsonErrors(APIView):
    def handle_exception(self, exc: Exception) -> Response:
        response = super().handle_exception(exc)
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return response


class SchemaView(_JsonErrors, SpectacularAPIView):
    def _get_version_parameter(self, request: HttpRequest) -> None:
        # The API has one version. drf-spectacular would take `?version=` as given
        # and write it into the Content-Disposition header, where a CR or a
        # character outside latin-1 made Django refuse the header: a 500 for a query.
        return None


class _SwaggerView(_JsonErrors, SpectacularSwaggerView):
    pass


_swagger = _SwaggerView.as_view(url_name="schema")


def api_docs(request: HttpRequest) -> HttpResponseBase:
    staff = Caller.for_person(getattr(request, "user", None)).is_staff
    if not staff and "HTTP_AUTHORIZATION" not in request.META:
        return redirect_to_login(request.get_full_path(), reverse("admin:login"))
    return _swagger(request)
