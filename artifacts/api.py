"""REST endpoints of the artifacts app: streaming download by ref, and the agent tool.

Both do exactly the checks of `xworkmate.artifacts.read` (the engine's
`open_artifact_by_ref` / `tool_execute`), so no path reaches a file that
`read` would refuse.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.http import StreamingHttpResponse
from django.utils.http import content_disposition_header
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.authentication import SessionAuthentication
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from artifacts import engine, hosted
from artifacts.engine import schema
from artifacts.services import artifact_settings
from xworkmate.api_errors import refusal_response
from xworkmate.auth import ApiKeyAuthentication, HasScope, caller_of
from xworkmate.lib.errors import InputError
from xworkmate.methods import scoped_params
from xworkmate.openapi import api_error_responses

_REF_PARAMS = ("artifactRef", "openclawSessionKey", "runId", "workspaceDir")

# --- OpenAPI ---------------------------------------------------------------------------

_DOWNLOAD_DESCRIPTION = (
    "Scope `gateway:read` (or a staff session). The ref must be one export or list issued "
    "for this session and run, and the file must still have the size and SHA-256 it was "
    "signed with; else a 400. The bytes are hashed again as they stream: a file changed "
    "mid-download breaks the stream off. An agent key acts on its own run, whatever the "
    "request names."
)
_DOWNLOAD_FIELDS: dict[str, dict[str, Any]] = {
    "artifactRef": schema.not_blank("the signed ref from export or list"),
    "openclawSessionKey": schema.IDS["openclawSessionKey"],
    "runId": schema.IDS["runId"],
    "workspaceDir": schema.WORKSPACE_DIR,
}
_DOWNLOAD_BODY = schema.params_object(
    {
        **_DOWNLOAD_FIELDS,
        "artifactRef": {
            **_DOWNLOAD_FIELDS["artifactRef"],
            "description": "the signed ref from export or list (any other value is a 400)",
        },
    },
    "artifactRef",
    "openclawSessionKey",
    "runId",
)
_DOWNLOAD_RESPONSES: dict[Any, Any] = {
    (200, "*/*"): OpenApiResponse(
        {"type": "string", "format": "binary"},
        description="the file's bytes, with the file's Content-Type, Content-Disposition "
        "(attachment; filename), Content-Length and its SHA-256 as ETag",
    ),
    **api_error_responses(
        {
            400: "a missing param, a bad or foreign ref, a file changed since its ref",
            403: "the API key lacks `gateway:read`",
            404: ("the file is gone (ENOENT wording)", ("INVALID_REQUEST",)),
        }
    ),
}
_DOWNLOAD_HEADERS = [
    OpenApiParameter(
        name,
        str,
        OpenApiParameter.HEADER,
        response=[200],
        required=True,
        description=text,
    )
    for name, text in (
        ("Content-Disposition", "attachment; filename=<the file's label>"),
        ("Content-Length", "the file's size"),
        ("ETag", "the file's SHA-256, quoted"),
        ("Cache-Control", "private, no-store"),
    )
]

_TOOL_DEFINITION = {
    "type": "object",
    "required": ["name", "label", "description", "parameters"],
    "properties": {
        "name": {"type": "string", "enum": [engine.TOOL_DEFINITION["name"]]},
        "label": {"type": "string"},
        "description": {"type": "string"},
        "parameters": {"type": "object", "description": "the JSON Schema of the tool's params"},
    },
}
# What each action reads is typed in its variant; the other params are ignored by it.
_TOOL_BODY = schema.params_object(
    {
        "action": {"type": "string", "enum": ["list", "read"]},
        "relativePath": schema.READ["properties"]["relativePath"],
        "artifactScope": schema.ARTIFACT_SCOPE,
        "artifactRef": schema.anything("read: the signed ref from export or list"),
        **{
            name: schema.anything(str(field["description"]))
            for name, field in schema.LIMITS.items()
        },
    },
    "action",
    description="The tool's own parameters (GET answers them); unknown params are ignored, "
    "and session, run and workspace come from the key. A read without artifactRef needs "
    "artifactScope and relativePath (relativePath alone when the key is bound to a scope).",
    oneOf=[
        {
            "properties": {"action": {"enum": ["list"]}, **schema.LIMITS},
        },
        {
            "properties": {
                "action": {"enum": ["read"]},
                "artifactRef": schema.READ["properties"]["artifactRef"],
                "maxInlineBytes": schema.LIMITS["maxInlineBytes"],
            },
            "anyOf": schema.READ["anyOf"],
        },
    ],
)
_TOOL_RESULT = {
    "type": "object",
    "required": ["content", "details"],
    "properties": {
        "content": {
            "type": "array",
            "minItems": 1,
            "maxItems": 1,
            "items": {
                "type": "object",
                "required": ["type", "text"],
                "properties": {
                    "type": {"type": "string", "enum": ["text"]},
                    "text": {"type": "string", "description": "the Markdown manifest"},
                },
            },
        },
        "details": {"type": "object"},
    },
}


class _GatewayReadOrStaff(HasScope):
    """A key with gateway:read (the bridge, an agent) or a signed-in staff user (the admin)."""

    def has_permission(self, request: Request, view: Any) -> bool:
        caller = caller_of(request)
        return super().has_permission(request, view) if caller.key else caller.is_staff


def _failure(exc: InputError) -> Response:
    # A missing file is 404 for a download (the bridge maps "no such file" to
    # artifact_missing); the code and message stay the contract's.
    missing = isinstance(exc, engine.ArtifactMissingError)
    return refusal_response(exc, status=404 if missing else None)


class ArtifactDownloadApi(APIView):
    """Stream one artifact by its `artifactRef`, for files too large to inline."""

    authentication_classes = [ApiKeyAuthentication, SessionAuthentication]
    permission_classes = [_GatewayReadOrStaff]
    required_scope = "gateway:read"

    @extend_schema(
        operation_id="artifacts_download",
        summary="Download an artifact by artifactRef (streamed)",
        description=_DOWNLOAD_DESCRIPTION,
        parameters=[
            *(
                OpenApiParameter(
                    name,
                    {k: v for k, v in _DOWNLOAD_FIELDS[name].items() if k != "nullable"},
                    required=name != "workspaceDir",
                    description=str(_DOWNLOAD_FIELDS[name]["description"]),
                )
                for name in _REF_PARAMS
            ),
            *_DOWNLOAD_HEADERS,
        ],
        responses=_DOWNLOAD_RESPONSES,
        tags=["artifacts"],
    )
    def get(self, request: Request) -> Response | StreamingHttpResponse:
        return self._download(request, request.query_params.dict())

    @extend_schema(
        operation_id="artifacts_download_post",
        summary="Download an artifact by artifactRef (JSON body, keeps keys out of URLs)",
        description=_DOWNLOAD_DESCRIPTION,
        request={"application/json": _DOWNLOAD_BODY},
        parameters=_DOWNLOAD_HEADERS,
        responses={**_DOWNLOAD_RESPONSES, **api_error_responses({411: "", 415: ""})},
        tags=["artifacts"],
    )
    def post(self, request: Request) -> Response | StreamingHttpResponse:
        body = request.data if isinstance(request.data, dict) else {}
        return self._download(request, body)

    def _download(self, request: Request, raw: dict[str, Any]) -> Response | StreamingHttpResponse:
        params = scoped_params({k: raw[k] for k in _REF_PARAMS if k in raw}, caller_of(request))
        try:
            # A workspace on another host's disk: that host read and verified it (D-K31).
            fetched = hosted.remote_download(params)
            if fetched is not None:
                return _file_response(
                    iter([fetched["content"]]),
                    label=fetched["label"],
                    content_type=fetched["content_type"],
                    size_bytes=fetched["size_bytes"],
                    sha256=fetched["sha256"],
                )
            opened = engine.open_artifact_by_ref(
                str(params.get("artifactRef", "")), params, artifact_settings()
            )
        except InputError as exc:
            return _failure(exc)
        # Hashed again as it streams: a file changed mid-download never completes
        # a 200 with other bytes than the ref's; the stream breaks off instead.
        return _file_response(
            opened.verified_chunks(),
            label=opened.label,
            content_type=opened.content_type,
            size_bytes=opened.size_bytes,
            sha256=opened.sha256,
        )


def _file_response(
    chunks: Iterator[bytes], *, label: str, content_type: str, size_bytes: int, sha256: str
) -> StreamingHttpResponse:
    response = StreamingHttpResponse(chunks, content_type=content_type)
    response["Content-Disposition"] = (
        content_disposition_header(as_attachment=True, filename=label) or "attachment"
    )
    response["Content-Length"] = str(size_bytes)
    response["ETag"] = f'"{sha256}"'
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

    @extend_schema(
        operation_id="artifacts_agent_tool_definition",
        summary="Agent tool definition (name, description, JSON schema of the parameters)",
        description="Scope `gateway:read`.",
        responses={
            200: OpenApiResponse(_TOOL_DEFINITION, description="the tool definition"),
            **api_error_responses({403: "the API key lacks `gateway:read`"}),
        },
        tags=["artifacts"],
    )
    def get(self, request: Request) -> Response:
        return Response(engine.TOOL_DEFINITION)

    @extend_schema(
        operation_id="artifacts_agent_tool",
        summary="Agent tool: list or read this run's artifacts (Markdown manifest)",
        description=(
            "Needs an agent key bound to a session and run "
            "(`manage.py xworkmate apikey create --session ... --run ...`) with "
            "`gateway:read`; any other key is refused with 403 before the body is read. "
            "Session, run and workspace come from the key, never from the body. "
            "Answers `{content: [{type: text, text}], details: {}}`."
        ),
        request={"application/json": _TOOL_BODY},
        responses={
            200: OpenApiResponse(_TOOL_RESULT, description="the tool result"),
            **api_error_responses(
                {
                    400: "",
                    403: "the API key lacks `gateway:read`, or is not bound to a session and run",
                    404: ("the file is gone (ENOENT wording)", ("INVALID_REQUEST",)),
                    411: "",
                    415: "",
                }
            ),
        },
        tags=["artifacts"],
    )
    def post(self, request: Request) -> Response:
        caller = caller_of(request)
        if not caller.is_agent:
            raise PermissionDenied("the artifact tool needs an API key bound to a session and run")
        body = request.data if isinstance(request.data, dict) else {}
        context = engine.ToolContext(
            session_key=caller.bound_session,
            run_id=caller.bound_run,
            workspace_dir=caller.bound_workspace,
            relative_task_directory=caller.bound_artifact_scope,
        )
        try:
            text = hosted.tool(body, context)
        except InputError as exc:
            return _failure(exc)
        return Response({"content": [{"type": "text", "text": text}], "details": {}})
