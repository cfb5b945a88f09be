"""session.prepare when its COMMIT's answer is lost, on real PostgreSQL (D-A19, D-A20).

The fault suite's immediate restarts once met a prepare whose COMMIT the server
made just before it was killed: the call answered 503 and removed the task
scope of a run that was committed. Here a relay in front of the server
(tests/integration/pgproxy.py) loses the COMMIT's answer, or the COMMIT, or
passes the COMMIT on late, on cue, so each outcome is met every run: the
prepare looks for its run under the session's lock once the server answers and
keeps the scope exactly when the run exists.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connections

import gateway.services
from artifacts.engine import create_prepared_scope
from artifacts.engine.paths import artifact_scope_for
from gateway.models import SessionMapping, TaskRun
from tests.conftest import ApiClient
from tests.gateway.conftest import workspace  # noqa: F401 (fixture)
from tests.integration.pgproxy import LosingProxy
from xworkmate.services import api_key_create

UNAVAILABLE = {
    "ok": False,
    "error": {"code": "UNAVAILABLE", "message": "the database is unavailable; retry later"},
}


@pytest.fixture
def proxy(real_services: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[LosingProxy]:
    """This thread's connection (the test client's requests use it) goes through the relay,
    which is armed just after the prepare made its scope: at that prepare's COMMIT."""
    wrapper = connections["default"]
    saved = {key: wrapper.settings_dict[key] for key in ("HOST", "PORT", "OPTIONS")}
    relay = LosingProxy((str(saved["HOST"] or "127.0.0.1"), int(saved["PORT"] or 5432)))
    wrapper.close()
    wrapper.settings_dict.update(
        HOST="127.0.0.1", PORT=relay.port, OPTIONS={**saved["OPTIONS"], "sslmode": "disable"}
    )
    try:
        yield relay
    finally:
        wrapper.close()
        wrapper.settings_dict.update(saved)
        relay.close()


@pytest.fixture
def root(workspace: Path) -> Path:  # noqa: F811 (the fixture imported above)
    """The workspace root the prepares make their task scopes in."""
    return workspace


def _arm_at_commit(
    monkeypatch: pytest.MonkeyPatch, relay: LosingProxy, mode: str, *, then_refuse: bool = False
) -> None:
    def create_then_arm(plan: Any) -> Any:
        prepared = create_prepared_scope(plan)
        relay.armed = mode  # the next COMMIT on the wire is this prepare's
        relay.refuse = then_refuse  # from now on new connections are closed at once
        return prepared

    monkeypatch.setattr(gateway.services, "create_prepared_scope", create_then_arm)


def _prepare(session: str, run: str) -> tuple[int, Any]:
    token = api_key_create(name=f"bridge-{uuid.uuid4().hex[:8]}", scopes=["gateway:write"])[1]
    response = ApiClient(token).post(
        "/gateway/xworkmate.session.prepare",
        {"appThreadKey": f"t-{session}", "openclawSessionKey": session, "runId": run},
    )
    return response.status_code, response.json()


def _committed(session: str, run: str) -> bool:
    return TaskRun.objects.filter(session__session_key=session, run_id=run).exists()


def _scope_of(root: Path, session: str, run: str) -> Path:
    return root / artifact_scope_for(session, run)


def test_a_commit_whose_answer_was_lost_keeps_its_scope_and_the_repeat_answers_200(
    proxy: LosingProxy,
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _arm_at_commit(monkeypatch, proxy, "lose_answer")
    status, body = _prepare("k1", "r1")
    assert proxy.lost == ["answer"]  # the server answered the COMMIT; the client never saw it
    # The call cannot tell its own commit from an earlier one's: it answers the error.
    assert (status, body) == (503, UNAVAILABLE)
    assert _committed("k1", "r1") and SessionMapping.objects.filter(app_thread_key="t-k1").exists()
    scope = _scope_of(root, "k1", "r1")
    assert scope.is_dir()
    monkeypatch.undo()
    status, body = _prepare("k1", "r1")  # the bridge's repeat
    assert status == 200, body
    assert body["payload"]["artifactDirectory"] == str(scope)


def test_a_commit_lost_before_the_server_got_it_leaves_neither_run_nor_scope(
    proxy: LosingProxy,
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _arm_at_commit(monkeypatch, proxy, "lose_commit")
    status, body = _prepare("k1", "r1")
    assert proxy.lost == ["commit"]
    assert (status, body) == (503, UNAVAILABLE)
    assert not _committed("k1", "r1") and not SessionMapping.objects.exists()
    assert not _scope_of(root, "k1", "r1").exists()


def test_a_commit_the_server_makes_after_the_connection_dropped_keeps_its_scope(
    proxy: LosingProxy,
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The connection drops while the server still holds the transaction; its COMMIT
    arrives a second later. The lookup waits on the session's lock for it, so it finds
    the run (a plain read at once would find none, and remove the scope of a run that
    then commits)."""
    proxy.late_seconds = 1.0
    _arm_at_commit(monkeypatch, proxy, "late_commit")
    status, body = _prepare("k1", "r1")
    assert (status, body) == (503, UNAVAILABLE)
    assert proxy.lost == ["connection", "answer"]
    assert _committed("k1", "r1")
    assert _scope_of(root, "k1", "r1").is_dir()


def test_a_server_that_stays_away_past_the_bounded_wait_leaves_the_scope_to_the_repeat(
    proxy: LosingProxy,
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The one case D-A20 leaves open: the commit was made, but the server cannot be
    asked within the wait. The call answers 503 and says so in the log; the bridge's
    repeat of the prepare (it repeats on 503) makes the scope of the committed run."""
    monkeypatch.setattr(gateway.services, "COMMIT_OUTCOME_WAIT_SECONDS", 0.5)
    _arm_at_commit(monkeypatch, proxy, "lose_answer", then_refuse=True)  # the server is away
    with caplog.at_level(logging.WARNING, logger="gateway.services"):
        status, body = _prepare("k1", "r1")
    assert proxy.lost == ["answer"]
    assert (status, body) == (503, UNAVAILABLE)
    warned = [r.getMessage() for r in caplog.records if r.name == "gateway.services"]
    assert any("run r1" in line and "did not answer" in line for line in warned), warned
    proxy.refuse = False
    monkeypatch.undo()  # the prepare as it runs in production, nothing armed
    scope = _scope_of(root, "k1", "r1")
    assert _committed("k1", "r1") and not scope.exists()
    status, body = _prepare("k1", "r1")
    assert status == 200, body
    assert scope.is_dir() and _committed("k1", "r1")
