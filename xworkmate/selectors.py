"""Reads of the project package."""

from __future__ import annotations

import hashlib

from xworkmate.models import ApiKey, NativeTask, PeriodicJobState, SessionMapping, TaskRun


def hash_api_key(raw: str) -> str:
    # Keys are 256-bit random tokens, so a plain SHA-256 is enough: there is no
    # password to brute-force, and a fast hash keeps every request cheap.
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def api_key_for_token(raw: str) -> ApiKey | None:
    """The key whose hash matches `raw`, revoked or not (the caller decides)."""
    return ApiKey.objects.filter(key_hash=hash_api_key(raw)).first()


def periodic_job_states() -> dict[str, PeriodicJobState]:
    return {state.name: state for state in PeriodicJobState.objects.all()}


# --- gateway -----------------------------------------------------------------


def mapping_for_session(session_key: str) -> SessionMapping | None:
    return (
        SessionMapping.objects.select_related("session")
        .filter(session__session_key=session_key)
        .first()
    )


def mapping_for_thread(app_thread_key: str) -> SessionMapping | None:
    # app_thread_key is unique, so "the first mapping whose appThreadKey
    # matches" of the original's scan is the only one.
    return (
        SessionMapping.objects.select_related("session")
        .filter(app_thread_key=app_thread_key)
        .first()
    )


def visible_run(session_key: str, run_id: str) -> TaskRun | None:
    """The run tasks.get may report: among the session's newest, never from the history."""
    return TaskRun.objects.filter(
        session__session_key=session_key, run_id=run_id, evicted_at__isnull=True
    ).first()


def native_task_lookup(session_key: str, token: str) -> NativeTask | None:
    """The native registry bound to one session (§13.2 step 4).

    With a token: the record whose task id is the token, else the newest whose
    run id is (`resolve(token) || get(token)`); without one: the newest record
    (`findLatest()`).
    """
    records = NativeTask.objects.filter(session_key=session_key)
    if not token:
        return records.order_by("-updated_at", "-id").first()
    found = records.filter(task_id=token).first()  # unique per session
    return found or records.filter(run_id=token).order_by("-updated_at", "-id").first()
