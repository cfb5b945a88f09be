"""The bridge's hooks, `session_start` and `agent_end` (§14.3), called over REST (D-A14).

They never fail the caller: a problem is logged with the contract's text and
shows only as `false` in the answer.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from artifacts import hosted
from gateway.methods import read_mapping_request
from gateway.policies import (
    hook_string,
    last_assistant_text,
    sanitize_error,
    sanitize_output,
)
from gateway.services import session_mapping_record, task_run_record_terminal
from xworkmate.auth import Caller
from xworkmate.lib.errors import InputError
from xworkmate.lib.jstext import check_max_length
from xworkmate.methods import scoped_params

logger = logging.getLogger("xworkmate.gateway")



@dataclass(frozen=True)
class HookResult:
    prepared: bool = False
    mapped: bool = False
    recorded: bool = False


def session_start_hook(event: Mapping[str, Any], caller: Caller) -> HookResult:
    """Prepare the run's scope, then record the mapping with source "session_start".

    Two steps, each checking all its params before it writes: a session that
    starts without an app thread still gets its scope (the agent writes
    there), only the mapping is skipped (case G127). No run record is written.
    """
    context = event.get("context")
    raw = context if context is not None else event
    params = scoped_params(raw if isinstance(raw, dict) else {}, caller)
    if not hook_string(params.get("openclawSessionKey")) or not params.get("runId"):
        return HookResult()  # a legacy `sessionKey` alone does nothing
    prepared = False
    try:
        hosted.prepare_scope(params)  # on the workspace's host (D-K31)
        prepared = True
        request = read_mapping_request(params)
        session_mapping_record(
            request=request,
            source="session_start",
            now=timezone.now(),
            by_agent=caller.is_agent,
        )
    except InputError as exc:
        logger.warning("xworkmate session_start preparation failed: Error: %s", exc.message)
        return HookResult(prepared=prepared)
    # D-A14: whatever breaks, the hook's caller is not failed; the traceback is logged.
    except Exception as exc:
        logger.exception("xworkmate session_start preparation failed: Error: %s", exc)
        return HookResult(prepared=prepared)
    return HookResult(prepared=True, mapped=True)


def agent_end_hook(event: Mapping[str, Any], ctx: Mapping[str, Any], caller: Caller) -> HookResult:
    """Record the run's terminal state with the final assistant text and redacted error."""
    raw_key = ctx.get("sessionKey")
    session_key = hook_string(event.get("sessionKey") if raw_key is None else raw_key)
    raw_run = event.get("runId")
    run_id = hook_string(ctx.get("runId") if raw_run is None else raw_run)
    if caller.is_agent:
        # An agent key reports only its own run (the trusted scope of §13.0).
        session_key, run_id = caller.bound_session, caller.bound_run
    if not session_key or not run_id:
        return HookResult()
    try:
        check_max_length("sessionKey", session_key)
        check_max_length("runId", run_id)
        task_run_record_terminal(
            session_key=session_key,
            run_id=run_id,
            success=event.get("success") is True,
            output=sanitize_output(last_assistant_text(event.get("messages"))),
            error=sanitize_error(event.get("error")),
            now=timezone.now(),
        )
    except InputError as exc:
        logger.warning("xworkmate agent_end state capture failed: Error: %s", exc.message)
        return HookResult()
    # D-A14: whatever breaks, the hook's caller is not failed; the traceback is logged.
    except Exception as exc:
        logger.exception("xworkmate agent_end state capture failed: Error: %s", exc)
        return HookResult()
    return HookResult(recorded=True)
