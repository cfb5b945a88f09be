"""URLs of the artifacts app (included by the root URLconf)."""

from __future__ import annotations

from django.urls import URLPattern, path

from artifacts.api import ArtifactDownloadApi, ArtifactToolApi

urlpatterns: list[URLPattern] = [
    path("api/artifacts/download", ArtifactDownloadApi.as_view(), name="artifacts-download"),
    path("api/artifacts/tool", ArtifactToolApi.as_view(), name="artifacts-tool"),
]
