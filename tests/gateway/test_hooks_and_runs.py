"""Hooks as REST calls (§14.3, D-A14), run state (§14.2), retention, native task records."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from gateway.models import NativeTask, SessionMapping, TaskRun
from gateway.policies import last_assistant_text, sanitize_error, sanitize_output
from gateway.services import task_run_history_purge
from tests.gateway.conftest import agent_end, db_state, native, prepare, session_start, tasks_get


def test_g121_it_extracts_only_the_final_assistant_display_text():
    """Case G121."""
    messages = [
        {"role": "user", "content": "secret prompt"},
        {"role": "assistant", "content": [{"type": "tool_call", "text": "ignored"}, {"type": "text", "text": "完成并已保存。"}]},
    ]
    assert last_assistant_text(messages) == "完成并已保存。"
    assert last_assistant_text("nope") == ""
    assert last_assistant_text([{"role": "assistant", "content": "  "}, "x"]) == ""


def test_g122_agent_end_records_the_terminal_run(bridge, workspace):
    """Case G122."""
    prepare(bridge, appThreadKey="t1", openclawSessionKey="k1", runId="r1")
    event = {
        "runId": "r1", "success": True,
        "messages": [
            {"role": "assistant", "content": "first"}, {"role": "user", "content": "u"},
            {"role": "Assistant", "content": [{"type": "OUTPUT_TEXT", "text": " a "}, {"type": "text", "text": "b"}, {"type": "tool_use", "text": "c"}]},
        ],
    }
    assert agent_end(bridge, event, {"sessionKey": "k1"}) == {"ok": True, "recorded": True}
    payload = tasks_get(bridge, appThreadKey="t1", runId="r1", includeArtifacts=False)
    assert (payload["status"], payload["success"], payload["terminal"], payload["terminalSource"]) == ("completed", True, True, "agent_end")
    assert payload["output"] == payload["resultSummary"] == payload["message"] == "a\nb"
    assert payload["task"]["completedAt"] and "error" not in payload


def test_g124_errors_are_redacted_and_non_text_errors_dropped(bridge, workspace):
    """Case G124."""
    assert sanitize_error("Bearer sk-abc.def- and nvapi-XYZ_1 and API Key: hunter2; apikey=zz, SK-UP") == (
        "Bearer sk-<redacted>- and nvapi-<redacted> and API Key: <redacted>; apikey=<redacted>, SK-<redacted>"
    )
    assert sanitize_error("401 Authentication Fails, api_key=sk-secret-value") == "401 Authentication Fails, api_key=<redacted>"
    assert sanitize_output("  out  ") == "out"
    assert sanitize_error({"message": "boom"}) == "" and sanitize_error(500) == "500"
    agent_end(bridge, {"runId": "r1", "success": False, "error": {"message": "boom"}}, {"sessionKey": "k1"})
    payload = tasks_get(bridge, openclawSessionKey="k1", runId="r1", includeArtifacts=False)
    assert payload["status"] == "failed" and payload["success"] is False
    assert "error" not in payload and "error" not in payload["task"] and "message" not in payload
    agent_end(bridge, {"runId": "r2", "error": "quota: api_key=sk-live-123"}, {"sessionKey": "k1"})
    payload = tasks_get(bridge, openclawSessionKey="k1", runId="r2", includeArtifacts=False)
    assert payload["error"] == payload["message"] == payload["task"]["error"] == "quota: api_key=<redacted>"


def test_output_and_error_are_capped_in_utf16_units():
    assert len(sanitize_output("x" * 20000)) == 16384
    assert len(sanitize_error("e" * 5000)) == 2048
    # An astral character is two UTF-16 units and is never split.
    assert sanitize_output("😀" * 9000) == "😀" * 8192


def test_g125_only_the_newest_32_runs_stay_visible_and_older_ones_go_to_history(bridge, workspace):
    """Case G125 (retention: the evicted runs are kept, not deleted)."""
    prepare(bridge, appThreadKey="t", openclawSessionKey="k", runId="bulk-0")
    for i in range(1, 41):
        prepare(bridge, appThreadKey="t", openclawSessionKey="k", runId=f"bulk-{i}")
    visible = TaskRun.objects.filter(evicted_at__isnull=True)
    assert visible.count() == 32
    assert set(visible.values_list("run_id", flat=True)) == {f"bulk-{i}" for i in range(9, 41)}
    assert TaskRun.objects.count() == 41  # history keeps bulk-0 … bulk-8
    payload = tasks_get(bridge, openclawSessionKey="k", runId="bulk-0", includeArtifacts=False)
    assert payload["code"] == "no_native_task_record"  # invisible to the gateway
    # Re-using an evicted run id starts a new visible row; the history row stays.
    prepare(bridge, appThreadKey="t", openclawSessionKey="k", runId="bulk-0")
    assert TaskRun.objects.filter(run_id="bulk-0").count() == 2
    assert tasks_get(bridge, openclawSessionKey="k", runId="bulk-0", includeArtifacts=False)["status"] == "running"


def test_history_runs_are_purged_only_after_the_retention(bridge, workspace, settings):
    retention = settings.XWORKMATE.value("gateway", "run_history_retention")
    for i in range(34):
        prepare(bridge, appThreadKey="t", openclawSessionKey="k", runId=f"r{i}")
    assert TaskRun.objects.filter(evicted_at__isnull=False).count() == 2
    now = timezone.now()
    assert task_run_history_purge(now=now + retention - timedelta(seconds=5)) == 0
    assert TaskRun.objects.count() == 34
    assert task_run_history_purge(now=now + retention + timedelta(seconds=5)) == 2
    assert TaskRun.objects.count() == 32 and not TaskRun.objects.filter(evicted_at__isnull=False).exists()


def test_g127_session_start_prepares_the_scope_and_records_the_mapping(bridge, workspace, caplog):
    """Case G127."""
    result = session_start(bridge, {"context": {"appThreadKey": "t5", "openclawSessionKey": "k5", "runId": "r5"}})
    assert result == {"ok": True, "prepared": True, "mapped": True}
    mapping = SessionMapping.objects.get(session__session_key="k5")
    assert (mapping.app_thread_key, mapping.source) == ("t5", "session_start")
    assert (workspace / "tasks/k5/r5").is_dir()
    assert not TaskRun.objects.exists()  # no running record from the hook
    with caplog.at_level(logging.WARNING, logger="xworkmate.gateway"):
        result = session_start(bridge, {"openclawSessionKey": "k6", "runId": "r6"})
    assert result == {"ok": True, "prepared": True, "mapped": False}
    assert (workspace / "tasks/k6/r6").is_dir()
    assert not SessionMapping.objects.filter(session__session_key="k6").exists()
    assert "xworkmate session_start preparation failed: Error: appThreadKey required" in caplog.text


def test_hooks_never_fail_the_caller_but_log(bridge, workspace, caplog):
    with caplog.at_level(logging.WARNING, logger="xworkmate.gateway"):
        response = bridge.post("/api/gateway/hooks/agent_end", raw=b"{not json")
        assert response.status_code == 200 and response.json() == {"ok": True, "recorded": False}
        response = bridge.post("/api/gateway/hooks/session_start", raw=b"[1]")
        assert response.status_code == 200 and response.json()["prepared"] is False
        # Conflicting mapping from the hook: logged with the contract's text.
        session_start(bridge, {"appThreadKey": "t1", "openclawSessionKey": "k1", "runId": "r1"})
        assert session_start(bridge, {"appThreadKey": "t2", "openclawSessionKey": "k1", "runId": "r1"})["mapped"] is False
        assert agent_end(bridge, {"runId": "r" * 600}, {"sessionKey": "k1"})["recorded"] is False
    assert "xworkmate agent_end state capture failed: Error: request body is not valid JSON" in caplog.text
    assert "xworkmate session_start preparation failed: Error: request body must be a JSON object" in caplog.text
    assert "xworkmate session_start preparation failed: Error: conflict: xworkmate session mapping" in caplog.text
    assert "xworkmate agent_end state capture failed: Error: runId must be at most 512 characters" in caplog.text
    # Without session or run (a legacy sessionKey alone) the hooks do nothing.
    before = db_state()
    assert agent_end(bridge, {"success": True}, {"sessionKey": "k1"})["recorded"] is False
    assert session_start(bridge, {"sessionKey": "k9", "runId": "r9"})["prepared"] is False
    assert db_state() == before


def test_hooks_refuse_outsiders_and_readers(workspace, outsider, reader, anonymous):
    for client, code in ((anonymous, 401), (outsider, 403), (reader, 403)):
        for path in ("/api/gateway/hooks/session_start", "/api/gateway/hooks/agent_end", "/api/gateway/native-tasks"):
            assert client.post(path, {"event": {"appThreadKey": "t", "openclawSessionKey": "k", "runId": "r"}}).status_code == code
    assert not SessionMapping.objects.exists() and not (workspace / "tasks").exists()


# --- native task records ----------------------------------------------------------------


@pytest.mark.parametrize("terminal", ["failed", "timed_out", "cancelled", "lost"])
def test_terminal_native_statuses_are_sticky(bridge, workspace, terminal):
    assert native(bridge, "k", taskId="t", status="running").status_code == 201
    response = native(bridge, "k", taskId="t", status=terminal, reason="x")
    assert response.status_code == 200 and response.json()["applied"] is True
    late = native(bridge, "k", taskId="t", status="succeeded")
    assert late.status_code == 200
    assert (late.json()["applied"], late.json()["status"]) == (False, terminal)
    assert late.json()["task"] == {"taskId": "t", "status": terminal, "reason": "x"}
    assert NativeTask.objects.get().status == terminal
    assert native(bridge, "k", taskId="t", status="running").json()["applied"] is False
    payload = tasks_get(bridge, openclawSessionKey="k", taskId="t", includeArtifacts=False)
    assert (payload["status"], payload["taskStatus"]) == ("failed", terminal)


def test_active_native_statuses_move_freely_and_a_resent_terminal_status_updates(bridge, workspace):
    native(bridge, "k", taskId="t", status="queued")
    assert native(bridge, "k", taskId="t", status="running").json()["applied"] is True
    done = native(bridge, "k", taskId="t", runId="r", status="succeeded").json()
    assert done["applied"] is True and done["runId"] == "r"
    again = native(bridge, "k", taskId="t", runId="r", status="succeeded", summary="ok").json()
    assert again["applied"] is True and again["task"]["summary"] == "ok"
    task = NativeTask.objects.get()
    assert task.terminal_at is not None and task.terminal_at <= task.updated_at


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"task": {"taskId": "t", "status": "running"}}, "sessionKey: This field is required."),
        # Blank once trimmed as JavaScript trims: no session has an empty key.
        ({"sessionKey": " \u3000\ufeff", "task": {"taskId": "t", "status": "running"}}, "sessionKey: This field may not be blank."),
        ({"sessionKey": 7, "task": {"taskId": "t", "status": "running"}}, "sessionKey: Not a valid string."),
        ({"sessionKey": "k", "task": {"status": "running"}}, "task: taskId: required, a non-empty string"),
        ({"sessionKey": "k", "task": {"taskId": "t", "status": "done"}}, "task: status: must be one of queued, running, succeeded, completed, failed, timed_out, cancelled, lost (got 'done')"),
        ({"sessionKey": "k", "task": {"taskId": "t", "status": "running", "runId": 5}}, "task: runId: must be a string of at most 512 characters"),
        ({"sessionKey": "k", "task": "nope"}, "task: Expected a dictionary of items but got type \"str\"."),
    ],
)
def test_bad_native_task_records_are_refused_and_change_nothing(bridge, workspace, body, message):
    native(bridge, "k", taskId="t", status="running")
    before = db_state()
    response = bridge.post("/api/gateway/native-tasks", body)
    assert response.status_code == 400
    assert response.json() == {"error": {"code": "INVALID_REQUEST", "message": message}}
    assert db_state() == before


def test_a_frozen_clock_keeps_run_times_ordered(bridge, workspace):
    with time_machine.travel("2026-03-01 00:00:00Z", tick=False):
        prepare(bridge, appThreadKey="t", openclawSessionKey="k", runId="r")
    with time_machine.travel("2026-02-01 00:00:00Z", tick=False):  # the clock stepped back
        agent_end(bridge, {"runId": "r", "success": True}, {"sessionKey": "k"})
    run = TaskRun.objects.get()
    assert run.status == "completed" and run.updated_at >= run.started_at
    assert run.completed_at == run.updated_at


def test_a_new_run_purges_its_sessions_history_past_the_retention(bridge, workspace, settings):
    retention = settings.XWORKMATE.value("gateway", "run_history_retention")
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        for i in range(33):
            prepare(bridge, appThreadKey="t", openclawSessionKey="k", runId=f"r{i}")
    assert TaskRun.objects.filter(evicted_at__isnull=False).count() == 1
    with time_machine.travel(start + retention - timedelta(seconds=1), tick=False):
        prepare(bridge, appThreadKey="t", openclawSessionKey="k", runId="within")
    assert TaskRun.objects.filter(run_id="r0").exists()  # never within the retention
    with time_machine.travel(start + retention + timedelta(seconds=1), tick=False):
        prepare(bridge, appThreadKey="t", openclawSessionKey="k", runId="after")
    assert not TaskRun.objects.filter(run_id="r0").exists()


def test_the_purge_task_is_a_celery_task(db):
    from gateway.tasks import purge_task_run_history

    assert purge_task_run_history.name == "xworkmate.purge_task_run_history"
    assert purge_task_run_history.run() == 0


def test_an_update_never_dates_before_a_concurrent_creation(db):
    """The race seen on PostgreSQL: another request created the record with a `now`
    taken just after ours; our update must not set updated_at before created_at."""
    from gateway.services import native_task_upsert

    later = timezone.now()
    earlier = later - timedelta(milliseconds=2)
    native_task_upsert(session_key="s", task_id="t", run_id="r", status="running",
                       record={"taskId": "t"}, now=later)
    result = native_task_upsert(session_key="s", task_id="t", run_id="r", status="failed",
                                record={"taskId": "t"}, now=earlier)
    task = NativeTask.objects.get(session_key="s", task_id="t")
    assert result.applied and task.status == "failed"
    assert task.updated_at == task.created_at == later and task.terminal_at == later
