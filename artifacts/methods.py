"""The four artifact gateway methods: thin adapters from the gateway table to the engine.

Params arrive already scoped by the dispatcher (a bound agent key's session
and run override the caller's, §13.0); the engine validates every param and
raises the contract's errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from artifacts import hosted
from artifacts.engine import schema
from xworkmate.methods import GatewayCall, GatewayMethod

# Each runs the engine on the host whose disk holds the workspace (D-K31).


def _export(call: GatewayCall) -> Mapping[str, Any]:
    return hosted.export(call.params)


def _collect_and_snapshot(call: GatewayCall) -> Mapping[str, Any]:
    return hosted.collect_and_snapshot(call.params)


def _list(call: GatewayCall) -> Mapping[str, Any]:
    return hosted.list_artifacts(call.params)


def _read(call: GatewayCall) -> Mapping[str, Any]:
    return hosted.read(call.params)


# In the contract's registration order (§1.4), after session.prepare and tasks.get.
METHODS = (
    GatewayMethod(
        "xworkmate.artifacts.export",
        _export,
        "gateway:read",
        "Export the task run's artifact manifest",
        description=(
            "Files under `tasks/<session>/<run>` (or the expectedArtifactDirs fallback when "
            "the scope is empty): paths, labels, content types, sizes, SHA-256, a signed "
            "`artifactRef` each, inline base64 up to maxInlineBytes, warnings, constraints."
        ),
        params_doc=schema.EXPORT,
        payload_doc=schema.MANIFEST,
        tags=("gateway", "artifacts"),
    ),
    GatewayMethod(
        "xworkmate.artifacts.collect-and-snapshot",
        _collect_and_snapshot,
        "gateway:write",
        "Copy task-referenced files into the run's scope, then export",
        description=(
            "Copies `sourceFiles` (absolute paths of files under the staging roots) into the "
            "scope: a file from `artifacts.openclaw_media_dir` lands in "
            "`artifacts/generated-media/<file name>`, one from `artifacts.openclaw_tmp_dir` in "
            "`artifacts/generated-tmp/<file name>`; any other file is skipped with a warning. "
            "Without `sourceFiles`, and only when `artifacts.scan_shared_media_roots` is on, "
            "the staging roots are scanned. Name clashes get a numeric suffix and a warning."
        ),
        params_doc=schema.COLLECT_AND_SNAPSHOT,
        payload_doc=schema.SNAPSHOT,
        tags=("gateway", "artifacts"),
    ),
    GatewayMethod(
        "xworkmate.artifacts.list",
        _list,
        "gateway:read",
        "List the task run's artifacts (metadata only)",
        params_doc=schema.LIST,
        payload_doc=schema.MANIFEST,
        tags=("gateway", "artifacts"),
    ),
    GatewayMethod(
        "xworkmate.artifacts.read",
        _read,
        "gateway:read",
        "Read one artifact by artifactRef or relativePath",
        description=(
            "The same checks as export; a file changed since its ref was issued is refused."
        ),
        params_doc=schema.READ,
        payload_doc=schema.MANIFEST,
        tags=("gateway", "artifacts"),
    ),
)
