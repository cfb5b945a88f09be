"""Reads of the artifacts app that other apps may use (D-K3)."""

from __future__ import annotations

from artifacts import hosted
from xworkmate.lib.errors import InputError


def run_artifacts(*, session_key: str, run_id: str) -> list[dict[str, object]] | str:
    """The run's current manifest rows, as `tasks.get` would list them, or the engine's error."""
    ids = {"openclawSessionKey": session_key, "runId": run_id}
    try:
        listed = hosted.list_artifacts(ids)
    except InputError as exc:
        return exc.message
    found = listed.get("artifacts")
    return [row for row in found if isinstance(row, dict)] if isinstance(found, list) else []
