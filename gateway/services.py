"""The gateway's write path: sessions, mappings, task runs, native task records (§14)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, connection, transaction
from django.db.models import DateTimeField, F, Q, Subquery, Value
from django.db.models.functions import Coalesce, Greatest

from artifacts.engine import (
    PreparedScope,
    PreparePlan,
    create_prepared_scope,
    discard_prepared_scope,
)
from gateway.conf import gateway_conf
from gateway.models import NativeTask, SessionEntry, SessionMapping, TaskRun
from gateway.policies import (
    MAX_RECORDED_TASK_RUNS,
    history_purge_before,
    native_status_may_change,
)
from xworkmate import commits, sql
from xworkmate.lib.errors import ConflictError, ForbiddenError, InputError
from xworkmate.lib.jstime import wire_time
from xworkmate.sql import columns, table

logger = logging.getLogger(__name__)


CONFLICT_MESSAGE = "conflict: xworkmate session mapping already points to a different session"
AGENT_CANNOT_MAP = (
    "an agent key cannot map an app thread: the bridge maps it (session.prepare with its key)"
)
MAPPING_WRITE_FAILED = "failed to write xworkmate session mapping"
RUN_WRITE_FAILED = "failed to write xworkmate task run state"


@dataclass(frozen=True)
class MappingInput:
    """A validated mapping request (gateway.methods.mapping builds it from the params)."""

    app_thread_key: str
    session_key: str
    expected_dirs: list[str]
    created_at_text: str  # the caller's createdAt verbatim; "" = now


@dataclass(frozen=True)
class _LockedSession:
    """A session's entry, locked for this transaction, with what the writes need."""

    entry: SessionEntry
    mapping: SessionMapping | None
    run: TaskRun | None  # the visible run of the run id asked for
    visible_runs: int


def _lock_session(*, session_key: str, run_id: str, now: datetime) -> _LockedSession:
    """The session's entry, created on first use (`fallbackEntry`), locked for this transaction.

    SELECT … FOR UPDATE, and on first use INSERT … ON CONFLICT DO NOTHING
    before locking again: two first writes for one session both end on the
    same row, the second waiting for the first to commit, so all writes to one
    session's mapping and runs are serialised by this row lock.

    Then, in a second statement, what the writes that follow need: the
    mapping, the visible run `run_id` and how many runs are visible. It must
    be a second statement: on PostgreSQL a statement that waited for a row
    lock still reads the other tables as they were when it started, so a
    mapping or run committed by the writer it waited for would be missed.
    """
    entry = _lock_entry(session_key)
    if entry is None:
        SessionEntry.objects.bulk_create(
            [SessionEntry(session_key=session_key, session_id=session_key, created_at=now)],
            ignore_conflicts=True,
        )
        entry = _lock_entry(session_key)
        if entry is None:  # the row exists now, whoever inserted it
            raise InputError(MAPPING_WRITE_FAILED)
    return _read_locked(entry, run_id)


def _lock_entry(session_key: str) -> SessionEntry | None:
    return sql.select_locked(SessionEntry, "t.session_key = %s", [session_key])


def _read_locked(entry: SessionEntry, run_id: str) -> _LockedSession:
    mapping_cols = columns(SessionMapping, "m")
    run_cols = columns(TaskRun, "r")
    sql = (
        f"SELECT (SELECT COUNT(*) FROM {table(TaskRun)} v "  # noqa: S608
        f"WHERE v.session_id = %s AND v.evicted_at IS NULL), {mapping_cols.sql}, {run_cols.sql} "
        f"FROM (SELECT 1 AS one) k "
        f"LEFT JOIN {table(SessionMapping)} m ON m.session_id = %s "
        f"LEFT JOIN {table(TaskRun)} r ON r.session_id = %s AND r.run_id = %s "
        f"AND r.evicted_at IS NULL"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [entry.pk, entry.pk, entry.pk, run_id])
        row = cursor.fetchone()
    end_mapping = 1 + len(mapping_cols)
    mapping = mapping_cols.build(row[1:end_mapping])
    run = run_cols.build(row[end_mapping:]) if run_id else None
    for child in (mapping, run):
        if child is not None:
            child.session = entry
    return _LockedSession(entry, mapping, run, int(row[0] or 0))


def _mapping_upsert(
    *,
    locked: _LockedSession,
    request: MappingInput,
    source: str,
    now: datetime,
    by_agent: bool = False,
) -> SessionMapping:
    """Create or refresh the session's mapping.

    An agent key (`by_agent`) acts on its own session only, and the mapping is
    the bridge's: it may re-prepare a session the bridge mapped to this very
    thread, which leaves the mapping as it is, but never map a thread (else an
    agent could claim a thread nobody had mapped yet, and the real session would
    get CONFLICT).
    """
    existing = locked.mapping
    if by_agent and existing is None:
        raise ForbiddenError(AGENT_CANNOT_MAP)
    if existing is not None:
        if existing.app_thread_key != request.app_thread_key:
            raise ConflictError(CONFLICT_MESSAGE)
        if by_agent:
            return existing
        # Re-prepare replaces the dirs (even with []) and keeps createdAt and
        # source (Q5, D-A7: the bridge re-prepares when the run id changes).
        updated_at = max(now, existing.created_at)
        changed = sql.update(
            SessionMapping,
            {"expected_artifact_dirs": request.expected_dirs, "updated_at": updated_at},
            {"id": existing.pk, "app_thread_key": request.app_thread_key},
        )
        if changed != 1:
            raise InputError(MAPPING_WRITE_FAILED)
        existing.expected_artifact_dirs = request.expected_dirs
        existing.updated_at = updated_at
        return existing
    try:
        # A savepoint: the unique app thread key is what refuses a second
        # session for the same thread, even when both inserts race.
        with transaction.atomic():
            return SessionMapping.objects.create(
                session=locked.entry,
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
    locked: _LockedSession,
    run_id: str,
    status: str,
    now: datetime,
    output: str = "",
    error: str = "",
) -> TaskRun:
    """Upsert one visible run of the locked session.

    As the original's record: startedAt survives, everything not supplied is
    dropped, so a re-start clears output, error and completedAt (Q5).
    """
    terminal = status != TaskRun.RUNNING
    values: dict[str, object] = {
        "status": status,
        "success": status == TaskRun.COMPLETED,
        "completed_at": now if terminal else None,
        "output": output,
        "error": error,
    }
    run = locked.run
    if run is None:
        run = sql.insert(
            TaskRun,
            {
                "session_id": locked.entry.pk,
                "run_id": run_id,
                "started_at": now,
                "updated_at": now,
                "evicted_at": None,
                **values,
            },
        )
        run.session = locked.entry
        # Only a new row can take the session past the newest MAX_RECORDED_TASK_RUNS
        # (an update keeps the count), so only then may there be anything to evict.
        if locked.visible_runs + 1 > MAX_RECORDED_TASK_RUNS:
            _evict_beyond_newest(entry=locked.entry, now=now)
        return run
    # A clock that stepped back must not break updated_at >= started_at.
    values["updated_at"] = max(now, run.started_at)
    if terminal:
        values["completed_at"] = values["updated_at"]
    # By id: the session's lock guarantees the run read is still visible.
    if sql.update(TaskRun, values, {"id": run.pk}) != 1:
        raise InputError(RUN_WRITE_FAILED)
    # The session row lock serialises writers: what was written is what the row holds.
    for field_name, value in values.items():
        setattr(run, field_name, value)
    return run


def _evict_beyond_newest(*, entry: SessionEntry, now: datetime) -> None:
    """Keep the newest MAX_RECORDED_TASK_RUNS visible; move the rest to the history.

    Nothing is deleted here: history rows go only once they have outlived
    `gateway.run_history_retention` (task_run_history_purge).
    """
    visible = TaskRun.objects.filter(session=entry, evicted_at__isnull=True)
    newest = visible.order_by("-updated_at", "-id").values("id")[:MAX_RECORDED_TASK_RUNS]
    if not visible.exclude(id__in=Subquery(newest)).update(evicted_at=now):
        return
    # This session's own history past the retention goes now; other sessions'
    # wait for the periodic purge (task_run_history_purge). A session has a
    # history only once it is at the cap, and from then on each new run evicts
    # one, so purging when evicting purges whenever the history grows.
    retention = gateway_conf().run_history_retention
    TaskRun.objects.filter(
        session=entry, evicted_at__lt=history_purge_before(now, retention)
    ).delete()


def session_prepare(
    *,
    request: MappingInput,
    plan: PreparePlan,
    now: datetime,
    by_agent: bool = False,
) -> tuple[SessionMapping, dict[str, object]]:
    """`xworkmate.session.prepare` after validation: mapping, run started, scope directory.

    One transaction. The scope directory is created last, so a refused mapping
    (CONFLICT) leaves neither rows nor directories behind; if creating the
    directory fails, the mapping and the run roll back with it. Should the
    COMMIT then raise, the run may or may not exist: the server can have made
    the commit and lost only its answer (killed in between), or never have got
    it. The scope this prepare made is kept exactly when the run exists, which
    is looked up under the session's lock once the server answers again
    (D-A19, D-A20); the call answers the error either way, and the bridge's
    repeat of the prepare answers 200 with the same scope. Durable, so leaving
    the block is the commit, not a savepoint's release.
    """
    prepared: PreparedScope | None = None
    try:
        with transaction.atomic(durable=True):
            run_id = plan.identity.run_id
            locked = _lock_session(session_key=request.session_key, run_id=run_id, now=now)
            mapping = _mapping_upsert(
                locked=locked, request=request, source="bridge_prepare", now=now, by_agent=by_agent
            )
            _run_write(locked=locked, run_id=run_id, status=TaskRun.RUNNING, now=now)
            prepared = create_prepared_scope(plan)
    except BaseException as exc:
        # The scope is made last, so a prepare that has one failed at its COMMIT.
        if prepared is not None:
            _settle_scope_after_failed_commit(
                plan=plan, prepared=prepared, session_key=request.session_key, now=now, exc=exc
            )
        raise
    return mapping, prepared.payload


# How long a prepare whose COMMIT raised waits, at most, for the server to answer
# whether its run exists. A restart takes well under a second here (tests/faults:
# the server answers again within 0.1-0.2 s); a longer outage leaves the scope to
# the bridge's repeat (D-A20).
COMMIT_OUTCOME_WAIT_SECONDS = 5.0


def _settle_scope_after_failed_commit(
    *,
    plan: PreparePlan,
    prepared: PreparedScope,
    session_key: str,
    now: datetime,
    exc: BaseException,
) -> None:
    """Keep the scope of a prepare whose COMMIT raised exactly when its run exists (D-A20).

    The run is looked for, not the transaction: after a crash the server may
    give a lost transaction's id to another one, so only the row tells. It is
    looked for under the session's row lock, taken as every prepare takes it:
    the lock waits for the failed transaction should the server still be
    finishing it (the connection dropped, the server up), so its outcome is
    final by then; and the scope goes while the lock is held, so no other
    prepare of the run can find the scope and commit in between. SQLite
    commits in this process, so an error there is no commit, and an exception
    that is not an error (the process is being stopped) gets no wait.
    """
    if connection.vendor != "postgresql" or not isinstance(exc, Exception):
        discard_prepared_scope(plan, prepared)
        return
    run_id = plan.identity.run_id

    def keep_only_with_its_run() -> None:
        if _lock_session(session_key=session_key, run_id=run_id, now=now).run is None:
            discard_prepared_scope(plan, prepared)

    if not commits.decide_in_new_transaction(
        keep_only_with_its_run,
        within=COMMIT_OUTCOME_WAIT_SECONDS,
        what=f"session.prepare of run {run_id}: looking for it after its COMMIT failed",
    ):
        logger.warning(
            "session.prepare of run %s: its COMMIT failed (%s) and the database did "
            "not answer within %g s whether the run exists; its task scope is "
            "removed (the bridge repeats the prepare on the 503, which makes it again)",
            run_id,
            exc,
            COMMIT_OUTCOME_WAIT_SECONDS,
        )
        discard_prepared_scope(plan, prepared)


def session_mapping_record(
    *, request: MappingInput, source: str, now: datetime, by_agent: bool = False
) -> SessionMapping:
    """Record the mapping alone (the `session_start` hook: source "session_start")."""
    with transaction.atomic():
        locked = _lock_session(session_key=request.session_key, run_id="", now=now)
        return _mapping_upsert(
            locked=locked, request=request, source=source, now=now, by_agent=by_agent
        )


def task_run_record_terminal(
    *, session_key: str, run_id: str, success: bool, output: str, error: str, now: datetime
) -> TaskRun:
    """The `agent_end` hook: the run is completed or failed, with output and redacted error."""
    with transaction.atomic():
        locked = _lock_session(session_key=session_key, run_id=run_id, now=now)
        status = TaskRun.COMPLETED if success else TaskRun.FAILED
        return _run_write(
            locked=locked, run_id=run_id, status=status, now=now, output=output, error=error
        )


def task_run_history_purge(*, now: datetime) -> int:
    """Delete history runs older than `gateway.run_history_retention`; returns how many."""
    retention = gateway_conf().run_history_retention
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
    raise InputError("failed to write native task record")
