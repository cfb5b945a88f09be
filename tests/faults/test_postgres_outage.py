"""D-K22 for real: gunicorn on a PostgreSQL cluster of the test's own, stopped mid-traffic.

The cluster (initdb in a temporary directory, a free port, run by the
unprivileged postgres account) is stopped with `pg_ctl stop -m fast` while a
client calls the REST API and the gateway: every answer while it is down is
503 with Retry-After in the path's JSON error shape (the REST one under /api,
the envelope under /gateway), never a 500 or an HTML page. Started again, the
same gunicorn answers 200 without a restart. The machine's shared PostgreSQL
is never touched.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.faults.conftest import served_workspace
from tests.integration.conftest import running_gunicorn, wait_for
from tests.support.own_postgres import OwnPostgres

pytestmark = pytest.mark.integration

def _call(base: str, token: str, kind: str) -> tuple[int, dict[str, str], bytes]:
    if kind == "rest":
        request = urllib.request.Request(
            base + "/api/longrun/task-state/list", headers={"Authorization": f"Bearer {token}"})
    else:
        run = uuid.uuid4().hex[:12]
        body = {"schemaVersion": 1, "appThreadKey": "t", "openclawSessionKey": "agent:main:t",
                "runId": run, "requestId": run}
        request = urllib.request.Request(
            base + "/gateway/xworkmate.session.prepare", data=json.dumps(body).encode(),
            method="POST",
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def test_a_stopped_database_answers_503_with_retry_after_and_recovers_without_a_restart(
    own_cluster: OwnPostgres, tmp_path: Path, capsys: Any
) -> None:
    served = served_workspace(tmp_path, own_cluster, "outage", "gateway:write", "longrun:read")
    config, db_url, token = served.config, served.db_url, served.token
    answers: list[tuple[str, str, int, dict[str, str], bytes]] = []
    phase = ["up"]
    stop = threading.Event()
    with running_gunicorn(tmp_path, config, workers=2, db_url=db_url) as base:

        def client() -> None:
            turn = 0
            while not stop.is_set():
                kind = ("rest", "gateway")[turn % 2]
                answers.append((phase[0], kind, *_call(base, token, kind)))
                turn += 1
                time.sleep(0.05)

        thread = threading.Thread(target=client, daemon=True)
        thread.start()
        time.sleep(2)
        phase[0] = "stopping"
        own_cluster.stop("fast")  # during the client's calls
        phase[0] = "down"
        time.sleep(4)
        phase[0] = "restarted"
        own_cluster.start()
        wait_for(lambda: [a for a in answers if a[0] == "restarted" and a[2] == 200][2:],
                 timeout=60, what="calls to succeed again after the restart")
        stop.set()
        thread.join(timeout=70)

    statuses = {(a[0], a[1], a[2]) for a in answers}
    assert {s for s in statuses if s[2] not in (200, 503)} == set(), statuses
    down = [a for a in answers if a[0] == "down"]
    assert {a[1] for a in down} == {"rest", "gateway"} and {a[2] for a in down} == {503}, statuses
    unavailable = [a for a in answers if a[2] == 503]
    for _, kind, _, headers, raw in unavailable:
        assert headers["Content-Type"].startswith("application/json"), raw[:200]
        assert headers["Retry-After"] == "5"
        body = json.loads(raw)
        error = {"code": "UNAVAILABLE", "message": "the database is unavailable; retry later"}
        expected: dict[str, Any] = {"error": error} if kind == "rest" else {"ok": False, "error": error}
        assert body == expected
    for kind in ("rest", "gateway"):
        assert [a[2] for a in answers if a[0] == "up" and a[1] == kind][:1] == [200]
        assert [a[2] for a in answers if a[1] == kind][-1] == 200  # the same gunicorn, again
    with capsys.disabled():
        print(f"\npostgres outage: {len(answers)} calls, {len(unavailable)} answered 503 "
              f"UNAVAILABLE with Retry-After, {len(answers) - len(unavailable)} answered 200, "
              f"no other status")
