"""Reads of the gateway: mappings, visible runs, native task records."""

from __future__ import annotations

from django.db.models import Case, Q, When

from xworkmate.gateway.models import NativeTask, SessionMapping, TaskRun


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
    # One query for both lookups: the record whose task id is the token (unique
    # per session) sorts first, then the run's records, newest first.
    return (
        records.filter(Q(task_id=token) | Q(run_id=token))
        .order_by(Case(When(task_id=token, then=0), default=1), "-updated_at", "-id")
        .first()
    )
