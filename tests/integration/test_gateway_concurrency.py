"""Concurrent session.prepare on PostgreSQL with real threads (issue 4 req 7).

Each thread makes its HTTP calls through its own Django test client and so
its own database connection; a barrier releases them together. Correctness
rests on the unique constraints and the session row lock, not on Python locks.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from gateway.models import NativeTask, SessionEntry, SessionMapping, TaskRun
from tests.conftest import ApiClient
from tests.gateway.conftest import workspace  # noqa: F401 (fixture)
from xworkmate.services import api_key_create

CONFLICT = "conflict: xworkmate session mapping already points to a different session"
THREADS = 8


def run_together(work: list[Callable[[], Any]]) -> list[Any]:
    barrier = threading.Barrier(len(work))
    results: list[Any] = [None] * len(work)

    def worker(index: int) -> None:
        try:
            barrier.wait()
            results[index] = work[index]()
        except Exception as exc:  # the result list carries it to the assertions
            results[index] = exc
            raise
        finally:
            connection.close()  # this thread's own connection

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(work))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


@pytest.fixture
def token(real_services: None, workspace) -> str:  # noqa: F811
    return api_key_create(name="bridge", scopes=["gateway:write"])[1]


def prepare_call(token: str, **params: Any) -> Callable[[], tuple[int, Any]]:
    def call() -> tuple[int, Any]:
        response = ApiClient(token).post("/gateway/xworkmate.session.prepare", params)
        return response.status_code, response.json()

    return call


def test_concurrent_prepares_for_one_thread_and_session_end_with_one_mapping(token):
    results = run_together(
        [prepare_call(token, appThreadKey="t1", openclawSessionKey="k1", runId=f"r{i % 2}") for i in range(THREADS)]
    )
    assert [status for status, _ in results] == [200] * THREADS, results
    assert SessionEntry.objects.count() == 1 and SessionMapping.objects.count() == 1
    assert sorted(TaskRun.objects.values_list("run_id", flat=True)) == ["r0", "r1"]
    assert {body["payload"]["mapping"]["createdAt"] for _, body in results} == {
        results[0][1]["payload"]["mapping"]["createdAt"]
    }


def test_concurrent_prepares_of_one_thread_for_different_sessions_have_one_winner(token):
    results = run_together(
        [prepare_call(token, appThreadKey="t1", openclawSessionKey=f"k{i}", runId="r") for i in range(THREADS)]
    )
    statuses = sorted(status for status, _ in results)
    assert statuses == [200] + [409] * (THREADS - 1), results
    for status, body in results:
        if status == 409:
            assert body == {"ok": False, "error": {"code": "CONFLICT", "message": CONFLICT}}
    [winner] = [body["payload"] for status, body in results if status == 200]
    mapping = SessionMapping.objects.select_related("session").get()
    assert (mapping.app_thread_key, mapping.session.session_key) == ("t1", winner["openclawSessionKey"])
    # The losers left nothing behind: no entry, no run.
    assert SessionEntry.objects.count() == 1 and TaskRun.objects.count() == 1


def test_concurrent_prepares_of_one_session_for_different_threads_have_one_winner(token):
    results = run_together(
        [prepare_call(token, appThreadKey=f"t{i}", openclawSessionKey="k1", runId="r") for i in range(THREADS)]
    )
    assert sorted(status for status, _ in results) == [200] + [409] * (THREADS - 1), results
    assert SessionMapping.objects.count() == 1 and TaskRun.objects.count() == 1


def test_concurrent_native_upserts_keep_one_record_and_a_sticky_terminal_state(token):
    def upsert(status: str) -> Callable[[], int]:
        def call() -> int:
            body = {"sessionKey": "k", "task": {"taskId": "t", "status": status}}
            return int(ApiClient(token).post("/api/gateway/native-tasks", body).status_code)

        return call

    results = run_together([upsert("failed" if i % 2 else "succeeded") for i in range(THREADS)])
    assert all(code in (200, 201) for code in results), results
    assert results.count(201) == 1
    task = NativeTask.objects.get()
    assert task.status in ("failed", "succeeded")
    # Whichever terminal status landed first stays.
    results = run_together([upsert("running") for _ in range(4)])
    assert NativeTask.objects.get().status == task.status
