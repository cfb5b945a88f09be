"""`xworkmate.session.prepare` (§13.1)."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from artifacts.engine import validate_prepare_params
from artifacts.hosted import workspace_host
from artifacts.services import artifact_settings
from gateway.methods.mapping import mapping_payload, read_mapping_request
from gateway.services import session_prepare
from xworkmate.hostfiles import run_on_host
from xworkmate.lib.jstext import check_max_length
from xworkmate.methods import GatewayCall


def session_prepare_method(call: GatewayCall) -> dict[str, Any]:
    """§13.1, on the host whose disk holds the workspace (D-K31): the scope directory
    is made there, in the same transaction as the mapping and the run."""
    # The params are already scoped to a bound key's run by the dispatcher (§13.0).
    answer: dict[str, Any] = run_on_host(
        workspace_host(call.params),
        PREPARE_OPERATION,
        params=call.params,
        by_agent=call.caller.is_agent,
    )
    return answer


PREPARE_OPERATION = "gateway.session.prepare"


def session_prepare_here(params: dict[str, Any], by_agent: bool) -> dict[str, Any]:
    """§13.1, with D-A6: every param is checked before the first write.

    The original wrote the mapping before checking runId and the workspace
    (Q4); here a call that will fail writes nothing, and the CONFLICT comes
    only from the mapping (D-A5), never from a message that says "conflict".
    """
    request = read_mapping_request(params)
    settings = artifact_settings()
    engine_params = {
        **params,
        "openclawSessionKey": request.session_key,
        "expectedArtifactDirs": request.expected_dirs,
    }
    plan = validate_prepare_params(engine_params, settings)
    check_max_length("runId", plan.identity.run_id)
    mapping, prepared = session_prepare(
        request=request, plan=plan, now=timezone.now(), by_agent=by_agent
    )
    return {
        **prepared,
        "mapping": mapping_payload(mapping),
        "appThreadKey": mapping.app_thread_key,
        "openclawSessionKey": mapping.session.session_key,
    }
