"""Reads of the artifacts app that other apps may use (D-K3)."""

from __future__ import annotations

from artifacts.engine import list_artifacts
from artifacts.services import artifact_settings
from xworkmate.lib.errors import InputError


def run_artifacts(*, session_key: str, run_id: str) -> list[dict[str, object]] | str:
    """The run's current manifest rows, as `tasks.get` would list them, or the engine's error."""
    ids = {"openclawSessionKey": session_key, "runId": run_id}
    try:
        listed = list_artifacts(ids, artifact_settings())
    except InputError as exc:
        return exc.message
    found = listed.get("artifacts")
    return [row for row in found if isinstance(row, dict)] if isinstance(found, list) else []
