"""Issue 21: PostgreSQL restarted (fast, immediate) under a burst of session.prepare.

Real gunicorn on a PostgreSQL cluster of the test's own (the test run's own
connection is on the suite's cluster and must survive). Client threads call
`xworkmate.session.prepare` without pause: new sessions, new runs of a
session already mapped, and a few identities every thread repeats at once
(the same session and run, serialised by the session's row lock). The cluster
is restarted with `pg_ctl restart -m fast` (every session ended, its
transaction rolled back) or `-m immediate` (the server killed, crash recovery
on the way up), ten times, while the calls go on.

Asserted: every call is answered, 200 or 503 with Retry-After in the gateway's
envelope, never a 500, an HTML page or a hang; after each restart the same
gunicorn answers 200 again. Then, against the database and the workspace:
every call answered 200 has its mapping and its run, and its scope directory;
no session is half-written (a mapping without a run, a run without the
mapping); and the scope directories are exactly the runs' (D-A19, D-A20): a prepare
that did not commit left no directory, one that committed, even if its
answer was a 503, has its directory.
"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

from artifacts.engine.paths import TASK_SCOPE_ROOT, artifact_scope_for
from artifacts.engine.scope import scope_owner
from gateway.models import SessionEntry, SessionMapping, TaskRun
from tests.faults.conftest import served_workspace
from tests.faults.traffic import CLIENT_TIMEOUT, Call, Calls, loop
from tests.integration.conftest import running_gunicorn, wait_for
from tests.support.own_postgres import OwnPostgres

pytestmark = pytest.mark.integration

CLIENTS = 6  # one gunicorn sync worker each: six prepares in flight when the server goes
# A restart ends a prepare between its directory and its COMMIT only now and
# then (that stretch is short): many quick restarts make that likely.
RESTARTS = 10
WARM_SECONDS = 2
SHARED = 3  # identities every client prepares again and again
UNAVAILABLE = {"ok": False, "error": {
    "code": "UNAVAILABLE", "message": "the database is unavailable; retry later"}}


def _identity(client: int, turn: int) -> tuple[str, str, str]:
    """(appThreadKey, openclawSessionKey, runId) of one call: a mix of new and repeated."""
    kind = turn % 4
    if kind in (0, 1):  # a new session, its first run
        return f"t-{client}-{turn}", f"agent:main:s-{client}-{turn}", f"r-{uuid.uuid4().hex[:10]}"
    if kind == 2:  # a new run of the client's own session
        return f"t-{client}", f"agent:main:s-{client}", f"r-{uuid.uuid4().hex[:10]}"
    shared = turn // 4 % SHARED  # the same session and run as other clients, at once
    return f"t-shared-{shared}", f"agent:main:shared-{shared}", f"r-shared-{shared}"


def _rows(db_url: str) -> tuple[dict[str, str | None], set[tuple[str, str]]]:
    """Every session with its mapping's app thread (None: no mapping), and every run."""
    entry, mapping, run = (m._meta.db_table for m in (SessionEntry, SessionMapping, TaskRun))
    with psycopg.connect(db_url) as conn:
        sessions: dict[str, str | None] = dict(conn.execute(
            f"SELECT e.session_key, m.app_thread_key FROM {entry} e "  # noqa: S608
            f"LEFT JOIN {mapping} m ON m.session_id = e.id").fetchall())
        runs = set(conn.execute(
            f"SELECT e.session_key, r.run_id FROM {run} r "  # noqa: S608
            f"JOIN {entry} e ON e.id = r.session_id").fetchall())
    return sessions, runs


def _scope_dirs(workspace: Path) -> dict[str, Any]:
    """Every task scope directory (tasks/<session>/<run>) with the identity that claimed it."""
    found = {}
    for path in sorted((workspace / TASK_SCOPE_ROOT).glob("*/*")):
        scope = path.relative_to(workspace).as_posix()
        found[scope] = scope_owner(str(workspace), scope)
    return found


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_a_postgres_restart_during_a_prepare_burst_leaves_no_half_prepare_and_no_orphan(
    mode: str, own_cluster: OwnPostgres, tmp_path: Path, capsys: Any
) -> None:
    served = served_workspace(tmp_path, own_cluster, "restart", "gateway:write")
    workspace, config, db_url, token = served.workspace, served.config, served.db_url, served.token
    calls = Calls()
    stop = threading.Event()
    restarting: list[float] = []  # pg_ctl restart, until the server accepts connections
    recovery: list[float] = []  # from then until the first call made since answered 200
    with running_gunicorn(tmp_path, config, workers=CLIENTS, db_url=db_url) as base:

        def client(number: int) -> Any:
            def prepare(turn: int) -> None:
                thread, session, run = _identity(number, turn)
                calls.call(f"client-{number}", "POST", f"{base}/gateway/xworkmate.session.prepare",
                           token, {"schemaVersion": 1, "appThreadKey": thread,
                                   "openclawSessionKey": session, "runId": run,
                                   "requestId": uuid.uuid4().hex})
            return prepare

        threads = [loop(stop, client(number)) for number in range(CLIENTS)]
        for thread in threads:
            thread.start()
        time.sleep(WARM_SECONDS)
        for restart in range(RESTARTS):
            calls.phase = f"restart {restart}"
            began = time.monotonic()
            own_cluster.restart(mode)  # the calls go on meanwhile
            calls.phase = f"after {restart}"
            back = time.monotonic()
            restarting.append(back - began)

            def answered_again(after: str = calls.phase) -> bool:
                # Every client has had a 200 for a call made since the server was back.
                return {r.kind for r in calls.rows if r.phase == after and r.status == 200} == {
                    f"client-{n}" for n in range(CLIENTS)}

            wait_for(answered_again, timeout=90, what=f"every client to get 200 after restart {restart}")
            first = min(r.started + r.took for r in calls.rows
                        if r.phase == calls.phase and r.status == 200)
            recovery.append(first - back)
            time.sleep(0.5)
        stop.set()
        for thread in threads:
            thread.join(timeout=CLIENT_TIMEOUT + 10)
        assert not any(t.is_alive() for t in threads), "a client never got an answer"

    sessions, runs = _rows(db_url)
    dirs = _scope_dirs(workspace)
    ok = [r for r in calls.rows if r.status == 200]
    unavailable = [r for r in calls.rows if r.status == 503]
    others = [r for r in calls.rows if r.status not in (200, 503)]
    # A prepare writes its session, the mapping and the run in one transaction.
    half_written = sorted(key for key, thread in sessions.items()
                          if thread is None or not any(run[0] == key for run in runs))
    orphans = sorted(scope for scope, owner in dirs.items() if owner not in runs)
    without_dir = sorted(run for run in runs if artifact_scope_for(*run) not in dirs)
    # Committed although answered 503 (the server went between COMMIT and its answer).
    committed_503 = ({(r.sent["openclawSessionKey"], r.sent["runId"]) for r in unavailable} & runs) - {
        (r.sent["openclawSessionKey"], r.sent["runId"]) for r in ok}
    with capsys.disabled():  # the figures first, so a failure shows them too
        print(f"\npostgres restart -m {mode} x{RESTARTS} under session.prepare: "
              f"{len(calls.rows)} calls, {len(ok)} answered 200, {len(unavailable)} 503 "
              f"({len(committed_503)} of their runs committed), {len(others)} other "
              f"(5xx {sum(1 for r in others if r.status >= 500)}); sessions {len(sessions)}, "
              f"runs {len(runs)}, scope dirs {len(dirs)}; half-written {len(half_written)}, "
              f"orphan dirs {len(orphans)}, runs without dir {len(without_dir)}; each restart "
              f"{min(restarting):.1f}s to {max(restarting):.1f}s, then 200 again within "
              f"{min(recovery):.1f}s to {max(recovery):.1f}s")

    assert not others, others[:5]  # no 500, no HTML, no hang (status 0)
    assert unavailable, "no call met the restarts: the test tested nothing"
    for row in unavailable:
        assert row.headers["Content-Type"].startswith("application/json"), row
        assert row.headers["Retry-After"] == "5", row
        assert row.answer == UNAVAILABLE, row
    # The same gunicorn answers 200 again: each client's last call, after the last restart.
    last: dict[str, Call] = {r.kind: r for r in sorted(calls.rows, key=lambda r: r.started)}
    assert {r.status for r in last.values()} == {200}, last
    for row in ok:
        thread, session, run = (row.sent[k] for k in ("appThreadKey", "openclawSessionKey", "runId"))
        assert row.answer["ok"] is True, row
        assert sessions.get(session) == thread and (session, run) in runs, row
        assert (workspace / artifact_scope_for(session, run)).is_dir(), row
        assert row.answer["payload"]["artifactDirectory"] == str(workspace / artifact_scope_for(session, run))
    assert half_written == [], half_written
    assert orphans == [], orphans
    assert without_dir == [], without_dir
