"""The gateway's own methods: `xworkmate.session.prepare` and `xworkmate.tasks.get`.

Contract §13.0-§13.2. One module per method (prepare, tasks_get), with the
mapping's reading and payload they share (mapping); there the params are
read and checked and the payloads built, in the contract's key order; the
writes are gateway.services, the reads gateway.selectors, the JSON Schemas
gateway.schemas. `METHODS` is what the app registers in the kernel's method
table (apps.py), first in the contract's order (§1.4).
"""

from __future__ import annotations

from gateway.methods.mapping import mapping_payload, read_mapping_request
from gateway.methods.prepare import session_prepare_method
from gateway.methods.tasks_get import tasks_get_method
from gateway.schemas import (
    SESSION_PREPARE_PARAMS,
    SESSION_PREPARE_PAYLOAD,
    TASKS_GET_PARAMS,
    TASKS_GET_PAYLOAD,
)
from xworkmate.methods import GatewayMethod

__all__ = [
    "METHODS",
    "mapping_payload",
    "read_mapping_request",
    "session_prepare_method",
    "tasks_get_method",
]

# The first two methods of the contract's order (§1.4); the artifacts app adds four.
METHODS = (
    GatewayMethod(
        "xworkmate.session.prepare",
        session_prepare_method,
        "gateway:write",
        "Map an app thread to an OpenClaw session and prepare the run's artifact scope",
        description=(
            "Records the durable appThreadKey ↔ openclawSessionKey mapping, creates "
            "`tasks/<session>/<run>` and marks the run running. Everything is checked "
            "before anything is written; a thread or session already mapped elsewhere "
            "is CONFLICT."
        ),
        params_doc=SESSION_PREPARE_PARAMS,
        payload_doc=SESSION_PREPARE_PAYLOAD,
        errors=(
            (403, "an agent key cannot map an app thread the bridge has not mapped"),
            (409, "the app thread or the session is already mapped to another"),
        ),
    ),
    GatewayMethod(
        "xworkmate.tasks.get",
        tasks_get_method,
        "gateway:read",
        "Task status, output and the current artifact manifest of one run",
        description=(
            "Looks the session up by openclawSessionKey or appThreadKey; answers the "
            "native task, else the recorded run, else artifact evidence. Lookup "
            "failures are successful payloads with `ok: false` and a `code`."
        ),
        params_doc=TASKS_GET_PARAMS,
        payload_doc=TASKS_GET_PAYLOAD,
    ),
)
