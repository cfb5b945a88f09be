"""The gateway's write path: sessions, mappings, task runs, native task records (§14)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import DateTimeField, F, Q, Value
from django.db.models.functions import Coalesce, Greatest

from artifacts.engine import ArtifactSettings, prepare_artifact_scope
from xworkmate.gateway.models import NativeTask, SessionEntry, SessionMapping, TaskRun
from xworkmate.gateway.policies import (
    MAX_RECORDED_TASK_RUNS,
    history_purge_before,
    native_status_may_change,
)
from xworkmate.lib.errors import ConflictError, GatewayError
from xworkmate.lib.jstime import wire_time

logger = logging.getLogger(__name__)


CONFLICT_MESSAGE = "conflict: xworkmate session mapping already points to a different session"
MAPPING_WRITE_FAILED = "failed to write xworkmate session mapping"
RUN_WRITE_FAILED = "failed to write xworkmate task run state"


@dataclass(frozen=True)
class MappingInput:
    """A validated mapping request (xworkmate.gateway.methods builds it from the params)."""

    app_thread_key: str
    session_key: str
    expected_dirs: list[str]
    created_at_text: str  # the caller's createdAt verbatim; "" = now


def _locked_session_entry(*, session_key: str, now: datetime) -> SessionEntry:
    """The session's entry, created on first use (`fallbackEntry`), locked for this transaction.

    INSERT … ON CONFLICT DO NOTHING, then SELECT … FOR UPDATE: two first
    writes for one session both end on the same row, the second waiting for
    the first to commit, so all writes to one session's mapping and runs are
    serialised by this row lock.
    """
    SessionEntry.objects.bulk_create(
        [SessionEntry(session_key=session_key, session_id=session_key, created_at=now)],
        ignore_conflicts=True,
    )
    return SessionEntry.objects.select_for_update().get(session_key=session_key)


def _mapping_upsert(
    *, entry: SessionEntry, request: MappingInput, source: str, now: datetime
) -> SessionMapping:
    existing = SessionMapping.objects.filter(session=entry).first()
    if existing is not None:
        if existing.app_thread_key != request.app_thread_key:
            raise ConflictError(CONFLICT_MESSAGE)
        # Re-prepare replaces the dirs (even with []) and keeps createdAt and
        # source (Q5, D-A7: the bridge re-prepares when the run id changes).
        updated_at = max(now, existing.created_at)
        changed = SessionMapping.objects.filter(
            pk=existing.pk, app_thread_key=request.app_thread_key
        ).update(expected_artifact_dirs=request.expected_dirs, updated_at=updated_at)
        if changed != 1:
            raise GatewayError(MAPPING_WRITE_FAILED)
        existing.expected_artifact_dirs = request.expected_dirs
        existing.updated_at = updated_at
        existing.session = entry
        return existing
    try:
        # A savepoint: the unique app thread key is what refuses a second
        # session for the same thread, even when both inserts race.
        with transaction.atomic():
            return SessionMapping.objects.create(
                session=entry,
                app_thread_key=request.app_thread_key,
                expected_artifact_dirs=request.expected_dirs,
                source=source,
                created_at_text=request.created_at_text or wire_time(now),
                created_at=now,
                updated_at=now,
            )
    except IntegrityError as exc:
        raise ConflictError(CONFLICT_MESSAGE) from exc


def _run_write(
    *,
    entry: SessionEntry,
    run_id: str,
    status: str,
    now: datetime,
    output: str = "",
    error: str = "",
) -> TaskRun:
    """Upsert one visible run (the session row is locked by the caller).

    As the original's record: startedAt survives, everything not supplied is
    dropped, so a re-start clears output, error and completedAt (Q5).
    """
    terminal = status != TaskRun.RUNNING
    run = TaskRun.objects.filter(session=entry, run_id=run_id, evicted_at__isnull=True).first()
    values: dict[str, object] = {
        "status": status,
        "success": status == TaskRun.COMPLETED,
        "completed_at": now if terminal else None,
        "output": output,
        "error": error,
    }
    if run is None:
        run = TaskRun.objects.create(
            session=entry, run_id=run_id, started_at=now, updated_at=now, **values
        )
    else:
        # A clock that stepped back must not break updated_at >= started_at.
        values["updated_at"] = max(now, run.started_at)
        if terminal:
            values["completed_at"] = values["updated_at"]
        changed = TaskRun.objects.filter(pk=run.pk, evicted_at__isnull=True).update(**values)
        if changed != 1:
            raise GatewayError(RUN_WRITE_FAILED)
        run.refresh_from_db()
    _evict_beyond_newest(entry=entry, now=now)
    return run


def _evict_beyond_newest(*, entry: SessionEntry, now: datetime) -> None:
    """Keep the newest MAX_RECORDED_TASK_RUNS visible; move the rest to the history.

    Nothing is deleted here: history rows go only once they have outlived
    `gateway.run_history_retention` (task_run_history_purge).
    """
    visible = TaskRun.objects.filter(session=entry, evicted_at__isnull=True)
    keep = list(
        visible.order_by("-updated_at", "-id").values_list("id", flat=True)[:MAX_RECORDED_TASK_RUNS]
    )
    visible.exclude(id__in=keep).update(evicted_at=now)
    # This session's own history past the retention goes now; other sessions'
    # wait for the periodic purge (task_run_history_purge).
    retention = settings.XWORKMATE.get("gateway", "run_history_retention")
    TaskRun.objects.filter(
        session=entry, evicted_at__lt=history_purge_before(now, retention)
    ).delete()


def session_prepare(
    *,
    request: MappingInput,
    run_id: str,
    engine_params: Mapping[str, object],
    artifact_settings: ArtifactSettings,
    now: datetime,
) -> tuple[SessionMapping, dict[str, object]]:
    """`xworkmate.session.prepare` after validation: mapping, run started, scope directory.

    One transaction. The scope directory is created last, so a refused mapping
    (CONFLICT) leaves neither rows nor directories behind; if creating the
    directory fails, the mapping and the run roll back with it.
    """
    with transaction.atomic():
        entry = _locked_session_entry(session_key=request.session_key, now=now)
        mapping = _mapping_upsert(entry=entry, request=request, source="bridge_prepare", now=now)
        _run_write(entry=entry, run_id=run_id, status=TaskRun.RUNNING, now=now)
        payload = prepare_artifact_scope(engine_params, artifact_settings)
    return mapping, payload


def session_mapping_record(*, request: MappingInput, source: str, now: datetime) -> SessionMapping:
    """Record the mapping alone (the `session_start` hook: source "session_start")."""
    with transaction.atomic():
        entry = _locked_session_entry(session_key=request.session_key, now=now)
        return _mapping_upsert(entry=entry, request=request, source=source, now=now)


def task_run_record_terminal(
    *, session_key: str, run_id: str, success: bool, output: str, error: str, now: datetime
) -> TaskRun:
    """The `agent_end` hook: the run is completed or failed, with output and redacted error."""
    with transaction.atomic():
        entry = _locked_session_entry(session_key=session_key, now=now)
        status = TaskRun.COMPLETED if success else TaskRun.FAILED
        return _run_write(
            entry=entry, run_id=run_id, status=status, now=now, output=output, error=error
        )


def task_run_history_purge(*, now: datetime) -> int:
    """Delete history runs older than `gateway.run_history_retention`; returns how many."""
    retention = settings.XWORKMATE.get("gateway", "run_history_retention")
    cutoff = history_purge_before(now, retention)
    with transaction.atomic():
        deleted, _ = TaskRun.objects.filter(evicted_at__lt=cutoff).delete()
    if deleted:
        logger.info("purged %d task run(s) moved to the history before %s", deleted, cutoff)
    return deleted


@dataclass(frozen=True)
class NativeTaskResult:
    task: NativeTask
    created: bool
    applied: bool  # False: a terminal status was already recorded and stays


def native_task_upsert(
    *,
    session_key: str,
    task_id: str,
    run_id: str,
    status: str,
    record: dict[str, object],
    now: datetime,
) -> NativeTaskResult:
    """Create or update one native task record; terminal statuses are sticky.

    The update is one conditional UPDATE (`status` still active, or the same
    status re-sent), so a late `succeeded` can never overwrite `failed`,
    `timed_out`, `cancelled` or `lost`, whatever order the platform's calls
    arrive in.
    """
    terminal = status in NativeTask.TERMINAL_STATUSES
    # A concurrent first upsert may have created the row with a `now` taken a
    # moment after ours: never let the update time fall before the creation.
    updated_at = Greatest(F("created_at"), Value(now, output_field=DateTimeField()))
    with transaction.atomic():
        for _ in range(2):
            changed = (
                NativeTask.objects.filter(session_key=session_key, task_id=task_id)
                .filter(Q(status__in=NativeTask.ACTIVE_STATUSES) | Q(status=status))
                .update(
                    status=status,
                    run_id=run_id,
                    record=record,
                    updated_at=updated_at,
                    terminal_at=Coalesce(F("terminal_at"), updated_at) if terminal else None,
                )
            )
            if changed:
                task = NativeTask.objects.get(session_key=session_key, task_id=task_id)
                return NativeTaskResult(task=task, created=False, applied=True)
            current = NativeTask.objects.filter(session_key=session_key, task_id=task_id).first()
            if current is not None:
                if not native_status_may_change(current.status, status):
                    logger.info(
                        "native task %s of %s stays %s; %s ignored (terminal states are sticky)",
                        task_id,
                        session_key,
                        current.status,
                        status,
                    )
                    return NativeTaskResult(task=current, created=False, applied=False)
                continue  # it changed between the two statements: try the UPDATE again
            try:
                with transaction.atomic():
                    task = NativeTask.objects.create(
                        session_key=session_key,
                        task_id=task_id,
                        run_id=run_id,
                        status=status,
                        record=record,
                        created_at=now,
                        updated_at=now,
                        terminal_at=now if terminal else None,
                    )
                return NativeTaskResult(task=task, created=True, applied=True)
            except IntegrityError:
                continue  # a concurrent first upsert won: apply ours as an update
    raise GatewayError("failed to write native task record")
