"""The request path does no needless work, and what the move unified stays unified (D-K7)."""

from __future__ import annotations

import re

from gateway.models import SessionEntry, SessionMapping, TaskRun
from tests.gateway.conftest import call, native, prepare, tasks_get

_TRANSACTION = re.compile(r"^(BEGIN|COMMIT|SAVEPOINT|RELEASE|ROLLBACK)\b")


def _statements(captured):
    return [q["sql"] for q in captured.captured_queries if not _TRANSACTION.match(q["sql"])]


def test_tasks_get_without_artifacts_reads_in_three_statements(bridge, django_assert_max_num_queries):
    prepare(bridge, appThreadKey="t", openclawSessionKey="k", runId="r1")
    with django_assert_max_num_queries(3) as captured:
        payload = tasks_get(bridge, openclawSessionKey="k", runId="r1", includeArtifacts=False)
    assert payload["status"] == "running" and payload["mapping"]["appThreadKey"] == "t"
    # The key, the session with its mapping and run, the native registry: no writes.
    assert [sql.split()[0] for sql in _statements(captured)] == ["SELECT", "SELECT", "SELECT"]


def test_tasks_get_by_app_thread_finds_the_session_in_the_same_statement(bridge, django_assert_max_num_queries):
    prepare(bridge, appThreadKey="thread-9", openclawSessionKey="agent:main:9", runId="r1")
    with django_assert_max_num_queries(3):
        payload = tasks_get(bridge, appThreadKey="thread-9", runId="r1", includeArtifacts=False)
    assert payload["openclawSessionKey"] == "agent:main:9" and payload["runId"] == "r1"


def test_a_re_prepare_with_a_new_run_writes_in_few_statements(bridge, django_assert_max_num_queries):
    prepare(bridge, appThreadKey="t", openclawSessionKey="k", runId="r1")
    with django_assert_max_num_queries(7) as captured:
        prepare(bridge, appThreadKey="t", openclawSessionKey="k", runId="r2")
    # The key; lock; read mapping, run and count; update the mapping; insert the run.
    assert [sql.split()[0] for sql in _statements(captured)] == [
        "SELECT", "SELECT", "SELECT", "UPDATE", "INSERT",
    ]
    assert TaskRun.objects.filter(run_id__in=["r1", "r2"], evicted_at__isnull=True).count() == 2


def test_a_session_key_is_trimmed_once_as_javascript_trims_it(bridge, workspace):
    """A BOM is JavaScript whitespace: stored and scoped as the same key (D-K7)."""
    payload = prepare(bridge, appThreadKey="\ufeffthread\u2028", openclawSessionKey="\ufeffk ", runId="\u3000r1")
    assert payload["openclawSessionKey"] == "k" and payload["relativeArtifactDirectory"] == "tasks/k/r1"
    assert SessionEntry.objects.get().session_key == "k"
    assert SessionMapping.objects.get().app_thread_key == "thread"
    assert TaskRun.objects.get().run_id == "r1"
    # Python's str.strip would also have removed \x1c; JavaScript's trim keeps it.
    status, body = call(bridge, "xworkmate.tasks.get", {"openclawSessionKey": "\x1ck", "includeArtifacts": False})
    assert status == 200 and body["payload"]["message"].endswith("found for \x1ck")


def test_native_task_answers_use_the_wire_time_format(bridge):
    response = native(bridge, "k", taskId="task-1", status="running")
    assert response.status_code == 201
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", response.json()["updatedAt"])
    # The same form as the gateway's own times.
    prepare(bridge, appThreadKey="t", openclawSessionKey="k2", runId="r1")
    mapping_time = tasks_get(bridge, openclawSessionKey="k2", runId="r1", includeArtifacts=False)["mapping"]["updatedAt"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", mapping_time)


def test_an_agent_end_on_a_recorded_run_updates_it_in_place(bridge):
    prepare(bridge, appThreadKey="t", openclawSessionKey="k", runId="r1")
    bridge.post("/api/gateway/hooks/agent_end", {"event": {"success": True, "messages": [{"role": "assistant", "content": "done"}]}, "ctx": {"sessionKey": "k", "runId": "r1"}})
    run = TaskRun.objects.get()
    assert (run.status, run.success, run.output) == ("completed", True, "done")
    assert run.completed_at is not None and run.updated_at >= run.started_at
