"""REST endpoints of the artifacts app: streaming download by ref, and the agent tool.

Both do exactly the checks of `xworkmate.artifacts.read` (the engine's
`open_artifact_by_ref` / `tool_execute`), so no path reaches a file that
`read` would refuse.
"""

from __future__ import annotations

from typing import Any

from django.http import StreamingHttpResponse
from django.utils.http import content_disposition_header
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_serializer,
)
from rest_framework import serializers
from rest_framework.authentication import SessionAuthentication
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from artifacts import engine
from artifacts.services import artifact_settings
from xworkmate.api_errors import error_body
from xworkmate.auth import ApiKeyAuthentication, HasScope, key_has_scope, request_key
from xworkmate.lib.errors import GatewayError
from xworkmate.methods import scoped_params

_REF_PARAMS = ("artifactRef", "openclawSessionKey", "runId", "workspaceDir")


class _GatewayReadOrStaff(HasScope):
    """A key with gateway:read (the bridge, an agent) or a signed-in staff user (the admin)."""

    def has_permission(self, request: Request, view: Any) -> bool:
        if request_key(request) is not None:
            return key_has_scope(request, "gateway:read") or self._deny("gateway:read")
        user = request.user
        return bool(user is not None and user.is_authenticated and user.is_staff)

    def _deny(self, scope: str) -> bool:
        self.message = f"API key lacks scope {scope}"
        return False


def _failure(exc: GatewayError) -> Response:
    # A missing file is 404 for a download (the bridge maps "no such file" to
    # artifact_missing); the code and message stay the contract's.
    status = 404 if isinstance(exc, engine.ArtifactMissingError) else exc.http_status
    return Response(error_body(exc.code, exc.message, envelope=False), status=status)


class ArtifactDownloadApi(APIView):
    """Stream one artifact by its `artifactRef`, for files too large to inline."""

    authentication_classes = [ApiKeyAuthentication, SessionAuthentication]
    permission_classes = [_GatewayReadOrStaff]
    required_scope = "gateway:read"

    @extend_schema_serializer(component_name="ArtifactDownloadInput")
    class InputSerializer(serializers.Serializer[Any]):
        artifactRef = serializers.CharField()
        openclawSessionKey = serializers.CharField()
        runId = serializers.CharField()
        workspaceDir = serializers.CharField(required=False)

    @extend_schema(
        operation_id="artifacts_download",
        summary="Download an artifact by artifactRef (streamed)",
        description=(
            "Scope `gateway:read` (or a staff session). The ref must belong to the given "
            "session and run, and the file must still have the size and SHA-256 it was "
            "signed with."
        ),
        parameters=[
            OpenApiParameter(name, str, required=name != "workspaceDir") for name in _REF_PARAMS
        ],
        responses={
            (200, "application/octet-stream"): OpenApiResponse(description="the file"),
            400: OpenApiResponse(description="INVALID_REQUEST (bad or foreign ref, changed file)"),
            404: OpenApiResponse(description="the file is gone (ENOENT wording)"),
        },
        tags=["artifacts"],
    )
    def get(self, request: Request) -> Response | StreamingHttpResponse:
        return self._download(request, request.query_params.dict())

    @extend_schema(
        operation_id="artifacts_download_post",
        summary="Download an artifact by artifactRef (JSON body, keeps keys out of URLs)",
        request=InputSerializer,
        responses={(200, "application/octet-stream"): OpenApiResponse(description="the file")},
        tags=["artifacts"],
    )
    def post(self, request: Request) -> Response | StreamingHttpResponse:
        body = request.data if isinstance(request.data, dict) else {}
        return self._download(request, body)

    def _download(self, request: Request, raw: dict[str, Any]) -> Response | StreamingHttpResponse:
        params = scoped_params({k: raw[k] for k in _REF_PARAMS if k in raw}, request_key(request))
        try:
            opened = engine.open_artifact_by_ref(
                str(params.get("artifactRef", "")), params, artifact_settings()
            )
        except GatewayError as exc:
            return _failure(exc)
        # Hashed again as it streams: a file changed mid-download never completes
        # a 200 with other bytes than the ref's; the stream breaks off instead.
        response = StreamingHttpResponse(
            opened.verified_chunks(), content_type=opened.content_type
        )
        response["Content-Disposition"] = (
            content_disposition_header(as_attachment=True, filename=opened.label) or "attachment"
        )
        response["Content-Length"] = str(opened.size_bytes)
        response["ETag"] = f'"{opened.sha256}"'
        response["Cache-Control"] = "private, no-store"
        return response


class ArtifactToolApi(APIView):
    """The agent tool `openclaw_multi_session_artifacts` over REST.

    Session and run come only from the agent's key (bound to one run); the
    body cannot name another session. The answer is the tool result shape:
    one text block with the Markdown manifest.
    """

    permission_classes = [HasScope]
    required_scope = "gateway:read"

    @extend_schema_serializer(component_name="ArtifactToolInput")
    class InputSerializer(serializers.Serializer[Any]):
        action = serializers.ChoiceField(choices=["list", "read"])
        relativePath = serializers.CharField(required=False)
        artifactScope = serializers.CharField(required=False)
        artifactRef = serializers.CharField(required=False)
        sinceUnixMs = serializers.FloatField(required=False)
        maxFiles = serializers.FloatField(required=False)
        maxInlineBytes = serializers.FloatField(required=False)

    @extend_schema(
        operation_id="artifacts_agent_tool_definition",
        summary="Agent tool definition (name, description, JSON schema of the parameters)",
        responses={200: OpenApiResponse(description="the tool definition")},
        tags=["artifacts"],
    )
    def get(self, request: Request) -> Response:
        return Response(engine.TOOL_DEFINITION)

    @extend_schema(
        operation_id="artifacts_agent_tool",
        summary="Agent tool: list or read this run's artifacts (Markdown manifest)",
        description=(
            "Needs an agent key bound to a session and run "
            "(`manage.py xworkmate apikey create --session ... --run ...`). "
            "Answers `{content: [{type: text, text}], details: {}}`."
        ),
        request=InputSerializer,
        responses={200: OpenApiResponse(description="the tool result")},
        tags=["artifacts"],
    )
    def post(self, request: Request) -> Response:
        key = request_key(request)
        if key is None or not key.is_bound:
            raise PermissionDenied("the artifact tool needs an API key bound to a session and run")
        body = request.data if isinstance(request.data, dict) else {}
        context = engine.ToolContext(
            session_key=key.bound_session_key,
            run_id=key.bound_run_id,
            workspace_dir=key.bound_workspace_dir,
            relative_task_directory=key.bound_artifact_scope,
        )
        try:
            text = engine.tool_execute(body, context, artifact_settings())
        except GatewayError as exc:
            return _failure(exc)
        return Response({"content": [{"type": "text", "text": text}], "details": {}})
