"""Reads of the gateway: a session's mapping and run, native task records.

`session_state` and `native_task_lookup` serve `tasks.get`, the bridge's
polling call: one SQL statement each (xworkmate.sql says why).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection

from gateway.models import NativeTask, SessionEntry, SessionMapping, TaskRun
from xworkmate.sql import columns, table


@dataclass(frozen=True)
class SessionState:
    """What the gateway recorded for one session: its mapping and one visible run."""

    entry: SessionEntry | None
    mapping: SessionMapping | None
    run: TaskRun | None


def session_state(
    *, session_key: str = "", app_thread_key: str = "", run_id: str = ""
) -> SessionState:
    """The session named by its key (or by its mapped app thread), in one query.

    `run` is the visible run `run_id` (among the session's newest, never from
    the history, §2); `mapping` is None when the session has none. Looking a
    session up by app thread finds it only through its mapping.
    """
    entry_cols = columns(SessionEntry, "e")
    mapping_cols = columns(SessionMapping, "m")
    run_cols = columns(TaskRun, "r")
    where = "e.session_key = %s" if session_key else "m.app_thread_key = %s"
    # Only identifiers from the models' metadata are formatted in; every value
    # is a query parameter.
    sql = (
        f"SELECT {entry_cols.sql}, {mapping_cols.sql}, {run_cols.sql} "  # noqa: S608
        f"FROM {table(SessionEntry)} e "
        f"LEFT JOIN {table(SessionMapping)} m ON m.session_id = e.id "
        f"LEFT JOIN {table(TaskRun)} r ON r.session_id = e.id AND r.run_id = %s "
        f"AND r.evicted_at IS NULL "
        f"WHERE {where}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [run_id, session_key or app_thread_key])
        row = cursor.fetchone()
    if row is None:
        return SessionState(None, None, None)
    split = (len(entry_cols), len(entry_cols) + len(mapping_cols))
    entry = entry_cols.build(row[: split[0]])
    mapping = mapping_cols.build(row[split[0] : split[1]])
    run = run_cols.build(row[split[1] :]) if run_id else None
    for child in (mapping, run):
        if child is not None:
            child.session = entry
    return SessionState(entry, mapping, run)


def native_task_lookup(session_key: str, token: str) -> NativeTask | None:
    """The native registry bound to one session (§13.2 step 4).

    With a token: the record whose task id is the token, else the newest whose
    run id is (`resolve(token) || get(token)`); without one: the newest record
    (`findLatest()`). One query: the task id match (unique per session) sorts
    first, then the run's records, newest first.
    """
    cols = columns(NativeTask, "n")
    sql = f"SELECT {cols.sql} FROM {table(NativeTask)} n WHERE n.session_key = %s "  # noqa: S608
    params: list[str] = [session_key]
    if token:
        sql += (
            "AND (n.task_id = %s OR n.run_id = %s) "
            "ORDER BY CASE WHEN n.task_id = %s THEN 0 ELSE 1 END, n.updated_at DESC, n.id DESC "
        )
        params += [token, token, token]
    else:
        sql += "ORDER BY n.updated_at DESC, n.id DESC "
    with connection.cursor() as cursor:
        cursor.execute(sql + "LIMIT 1", params)
        row = cursor.fetchone()
    return cols.build(row) if row is not None else None
