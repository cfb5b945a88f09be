"""The gateway method table and its call envelope.

Every `xworkmate.*` method the bridge calls is registered here once, with the
scope it needs; the dispatch views (xworkmate.dispatch) look methods up by
name. Apps register their methods in their AppConfig.ready(), in the
contract's order (the kernel knows no method of its own: D-K1).

Handlers take a GatewayCall and return the payload dict, or raise
InputError (INVALID_REQUEST, HTTP 400) / ConflictError (CONFLICT, HTTP 409)
with the contract's message. The code is chosen by the error's type, never by
looking for words in the message (D-A5).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext as _

from xworkmate.auth import Caller
from xworkmate.lib.errors import InputError
from xworkmate.lib.jstext import js_trim
from xworkmate.lib.run_identity import with_run_identity
from xworkmate.lib.strict_json import decode_json
from xworkmate.policies import SCOPES

__all__ = [
    "GatewayCall",
    "GatewayMethod",
    "UnknownMethodError",
    "body_too_large",
    "get_method",
    "method_areas",
    "parse_body",
    "register_method",
    "registered_methods",
    "scoped_params",
    "split_envelope",
    "unregister_method",
]


class UnknownMethodError(InputError):
    http_status = 404


@dataclass(frozen=True)
class GatewayCall:
    method: str
    params: dict[str, Any]
    caller: Caller  # who calls (D-K12); params are already scoped to an agent key's run


Handler = Callable[[GatewayCall], Mapping[str, Any]]


@dataclass(frozen=True)
class GatewayMethod:
    name: str
    handler: Handler
    scope: str
    summary: str
    description: str = ""
    # JSON Schemas of the params object and the payload, for the OpenAPI schema only
    # (the handler checks its params itself); None documents any object.
    params_doc: Mapping[str, Any] | None = None
    payload_doc: Mapping[str, Any] | None = None
    tags: tuple[str, ...] = field(default=("gateway",))
    # Error statuses beyond 400 (bad params) and 403 (the key lacks the scope) that
    # the handler itself answers, with what they mean: 403 (ForbiddenError), 409
    # (ConflictError). For the OpenAPI schema.
    errors: tuple[tuple[int, str], ...] = ()


_METHODS: dict[str, GatewayMethod] = {}


def register_method(method: GatewayMethod) -> GatewayMethod:
    if method.name in _METHODS:
        raise ValueError(f"gateway method {method.name!r} is already registered")
    if method.scope not in SCOPES:
        raise ValueError(
            f"gateway method {method.name!r}: scope must be one of {', '.join(SCOPES)} "
            f"(got {method.scope!r})"
        )
    _METHODS[method.name] = method
    return method


def unregister_method(name: str) -> None:
    _METHODS.pop(name, None)


def get_method(name: str) -> GatewayMethod:
    try:
        return _METHODS[name]
    except KeyError:
        raise UnknownMethodError(_("unknown method: %(name)s") % {"name": name}) from None


def method_areas() -> list[str]:
    """The areas (`gateway`, `plans`...) that have methods, in registration order."""
    return list(dict.fromkeys(m.scope.partition(":")[0] for m in _METHODS.values()))


def registered_methods() -> list[GatewayMethod]:
    """In registration order (the contract asserts the order of its six methods)."""
    return list(_METHODS.values())


def scoped_params(params: Mapping[str, Any], caller: Caller) -> dict[str, Any]:
    """§13.0 `scopedGatewayParams`: a key bound to a run overrides the caller's scope.

    The original took the session and run from the host's trusted request
    scope; here the trust comes from the API key. An agent key bound to
    session S and run R can therefore only ever act on S/R, whatever its
    params say: its workspace is the bound one (or the default workspace), and
    the fallback dirs are the bridge's (the session's mapping), never the
    agent's. Everyone else (the bridge's unbound keys) passes its params unchanged.
    """
    if not caller.is_agent:
        return dict(params)
    return with_run_identity(
        params,
        drop=_AGENT_KEY_DECIDES,
        session_key=caller.bound_session,
        run_id=caller.bound_run,
        workspace_dir=caller.bound_workspace,
        artifact_scope=caller.bound_artifact_scope,
    )


# Params an agent key's binding decides; whatever the caller sends for them is dropped.
# (An `artifactScope` it names stays: the engine refuses one that is not the run's.)
_AGENT_KEY_DECIDES = frozenset({"workspaceDir", "expectedArtifactDirs"})


def parse_body(raw: bytes, *, limit: int) -> dict[str, Any]:
    """Decode a request body as a JSON object, with a clear INVALID_REQUEST otherwise.

    The same strict decoding as every other API body (xworkmate.parsers): no
    NaN, no out-of-range numbers, no NUL or lone surrogates, bounded nesting.
    """
    if len(raw) > limit:
        raise body_too_large(limit)
    # No body at all reads as `{}`; a body of blanks is no JSON text, so it is refused
    # like any other that is not one (D-K15: what the schema calls invalid is refused).
    if not raw:
        return {}
    value = decode_json(raw)
    if not isinstance(value, dict):
        raise InputError(f"request body must be a JSON object (got {_json_type(value)})")
    return value


def body_too_large(limit: int) -> InputError:
    return InputError(f"request body too large: limit is {limit} bytes (gateway.max_body_bytes)")


def split_envelope(body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """`{"method": ..., "params": {...}}` → (method, params)."""
    method = body.get("method")
    if not isinstance(method, str) or not js_trim(method):
        raise InputError("method: required, a non-empty string")
    params = body.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise InputError(f"params: must be a JSON object (got {_json_type(params)})")
    return js_trim(method), params


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else type(value).__name__
