"""The long-run REST API: every operation answers the original's output and exit code (D-B21).

Every endpoint is called with the scope it needs and without it; an agent
key (bound to a session) is set against every endpoint with another
session's task and another session's key, and nothing changes; bad input
names the field and changes nothing.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
import time_machine
from django.utils import timezone

from longrun.models import LongTask, SessionLock, TaskEvent, Transition
from tests.conftest import ApiClient, configure
from tests.longrun.conftest import FIELDS, K2, K
from xworkmate.services import KeyBinding, api_key_create

pytestmark = pytest.mark.django_db

EXIT = "X-Longrun-Exit-Code"
SET = "/api/longrun/task-state/set"
STATE = "/api/longrun/task-state"

REGISTER: dict[str, Any] = {
    "task": "迁移",
    "origin_session_key": K,
    "state": "executing",
    **FIELDS,
    "progress_every": "3m",
}


def _agent(session: str = K) -> ApiClient:
    _, token = api_key_create(
        name=f"agent-{session.replace(':', '-')}",
        scopes=["longrun:write"],
        binding=KeyBinding(session_key=session, run_id="run-1"),
    )
    return ApiClient(token)


def _ok(response: Any, exit_code: int = 0) -> Any:
    assert response.status_code == 200, response.content
    assert response[EXIT] == str(exit_code), (response[EXIT], response.content)
    return response.json()


def _refused(response: Any, status: int, code: str, exit_code: int | None = None) -> str:
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
    assert body["error"]["code"] == code
    if exit_code is not None:
        assert response[EXIT] == str(exit_code)
    return str(body["error"]["message"])


def _get(client: ApiClient, path: str, **query: Any) -> Any:
    from urllib.parse import urlencode

    return client.get(f"{path}?{urlencode(query, doseq=True)}" if query else path)


def _later(**delta: float) -> Any:
    """The clock moved on (the tasks were registered at the real now)."""
    return time_machine.travel(timezone.now() + timedelta(**delta), tick=False)


def _snapshot() -> list[Any]:
    """Everything the long-run tables hold, to prove a refused call wrote nothing."""
    return [
        list(LongTask.objects.order_by("pk").values()),
        list(SessionLock.objects.order_by("pk").values()),
        list(Transition.objects.order_by("pk").values()),
        list(TaskEvent.objects.order_by("pk").values()),
    ]


@pytest.fixture
def registered(owner: ApiClient) -> dict[str, Any]:
    record: dict[str, Any] = _ok(owner.post(SET, REGISTER))
    return record


# --- task_state.py -------------------------------------------------------------------------------


def test_set_answers_the_stored_record_and_holds_the_lock(owner, registered):
    assert registered["task"] == "迁移" and registered["state"] == "executing"
    assert registered["origin_session_key"] == K and registered["progress_every"] == "3m"
    assert registered["session"] == registered["session_label"] == "迁移会话"
    assert registered["last_progress_delivery_status"] is None
    assert _ok(owner.get(f"{STATE}/locks")) == {K: "迁移"}
    assert _ok(_get(owner, f"{STATE}/show", task="迁移")) == registered
    listed = _ok(owner.get(f"{STATE}/list"))
    assert listed.startswith("- 迁移 | executing | 迁移会话 | next=30m | updated=")


def test_set_keeps_the_originals_checks_in_order(owner, registered):
    before = _snapshot()
    message = _refused(owner.post(SET, {**REGISTER, "state": "running"}), 400, "INVALID_REQUEST", 2)
    assert message == "invalid state: running"
    keyless = {key: value for key, value in REGISTER.items() if key != "origin_session_key"}
    message = _refused(owner.post(SET, {**keyless, "task": "B"}), 409, "CONFLICT", 4)
    assert json.loads(message) == {
        "error": "missing origin_session_key",
        "task": "B",
        "state": "executing",
        "message": "long-run start/update requires a real origin_session_key; state "
        "registration alone does not mean the task started in the target session",
    }
    message = _refused(owner.post(SET, {**REGISTER, "task": "B"}), 409, "CONFLICT", 3)
    assert json.loads(message) == {
        "error": "session lock exists",
        "origin_session_key": K,
        "current_task": "迁移",
        "requested_task": "B",
    }
    assert _snapshot() == before
    taken = _ok(owner.post(SET, {**REGISTER, "task": "B", "force_lock": True}))
    assert taken["task"] == "B" and _ok(owner.get(f"{STATE}/locks")) == {K: "B"}


def test_leaving_done_needs_reopen_d_b17(owner, registered):
    _ok(owner.post(SET, {**REGISTER, "state": "done"}))
    message = _refused(owner.post(SET, REGISTER), 409, "CONFLICT", 2)
    assert json.loads(message)["error"] == "reopen required"
    assert _ok(owner.post(SET, {**REGISTER, "reopen": True}))["state"] == "executing"


def test_progress_bookkeeping_and_activity_signals(owner, registered):
    sent = _ok(owner.post(f"{STATE}/touch-progress", {"task": "迁移", "note": "看日志"}))
    assert sent["last_progress_delivery_status"] == "sent" and sent["note"] == "读取迁移日志"
    attempt = _ok(
        owner.post(f"{STATE}/mark-progress-attempt", {"task": "迁移", "error": "gateway 502"})
    )
    assert attempt["last_progress_send_error"] == "gateway 502"
    unknown = _ok(owner.post(f"{STATE}/mark-progress-unknown", {"task": "迁移"}))
    assert unknown["last_progress_delivery_status"] == "unknown"
    assert unknown["last_progress_send_error"] == "delivery result unknown"
    failed = _ok(owner.post(f"{STATE}/mark-progress-failed", {"task": "迁移", "error": "超时"}))
    assert (failed["last_progress_delivery_status"], failed["last_progress_send_error"]) == (
        "failed",
        "超时",
    )
    marked = _ok(
        owner.post(
            f"{STATE}/mark-progress-sent",
            {"task": "迁移", "delivery_id": "fg-0123456789abcdef", "message_hash": "ab" * 32},
        )
    )
    assert marked["last_progress_delivery_id"] == "fg-0123456789abcdef"
    assert marked["last_progress_send_error"] is None
    reply = _ok(owner.post(f"{STATE}/mark-visible-reply", {"task": "迁移"}))
    assert reply["last_visible_reply_at"] is not None
    tool = _ok(owner.post(f"{STATE}/mark-tool-result", {"task": "迁移", "note": "ls"}))
    assert tool["last_tool_result_at"] is not None
    resumed = _ok(owner.post(f"{STATE}/mark-resume", {"task": "迁移", "reason": "idle_timeout"}))
    assert (resumed["last_resume_reason"], resumed["last_resume_count"]) == ("idle_timeout", 1)
    events = TaskEvent.objects.filter(task__name="迁移")
    assert events.filter(by="api-key:owner").count() == 8


def test_an_unknown_task_is_the_originals_not_found_on_every_task_endpoint(owner, db):
    for path in ("touch-progress", "mark-progress-attempt", "mark-progress-sent",
                 "mark-progress-unknown", "mark-progress-failed", "mark-visible-reply",
                 "mark-tool-result", "mark-resume", "clear"):
        message = _refused(owner.post(f"{STATE}/{path}", {"task": "Z"}), 404, "NOT_FOUND", 1)
        assert message == "task not found: Z", path
    for path in (f"{STATE}/show", "/api/longrun/check-foreground-progress",
                 "/api/longrun/build-progress-update", "/api/longrun/foreground-tick",
                 "/api/longrun/keepalive-tick", "/api/longrun/emit-keepalive-resume"):
        assert _refused(_get(owner, path, task="Z"), 404, "NOT_FOUND", 1) == "task not found: Z"
    work = owner.post("/api/longrun/work-cycle-tick", {"task": "Z"})
    assert _refused(work, 404, "NOT_FOUND", 1) == "task not found: Z"


def test_locks_acquire_release_and_clear(owner, registered):
    _ok(owner.post(SET, {**REGISTER, "task": "C", "state": "blocked"}))
    held = owner.post(f"{STATE}/acquire-lock", {"session": K, "task": "C"})
    assert json.loads(_refused(held, 409, "CONFLICT", 3))["ok"] is False
    not_holder = owner.post(f"{STATE}/release-lock", {"session": K, "task": "C"})
    assert _ok(not_holder, 1) == {"ok": False, "origin_session_key": K, "task": "C"}
    # Without a task the answer names none, as the original's (the holder is in `locks`).
    assert _ok(owner.post(f"{STATE}/release-lock", {"session": K})) == {
        "ok": True, "origin_session_key": K, "task": None,
    }
    assert _ok(owner.post(f"{STATE}/acquire-lock", {"session": K, "task": "C"}))["ok"] is True
    missing = owner.post(f"{STATE}/acquire-lock", {"task": "C"})
    assert _refused(missing, 400, "INVALID_REQUEST") == "session: This field is required."
    assert _ok(owner.post(f"{STATE}/clear", {"task": "C"})) == "cleared: C"
    assert _ok(owner.post(f"{STATE}/clear", {})) == "cleared all tasks"
    assert _ok(owner.get(f"{STATE}/list")) == "no tasks"


# --- validation, heartbeat, keepalive, watchdog --------------------------------------------------


def test_validate_task_start(owner, registered):
    valid = _ok(_get(owner, "/api/longrun/validate-task-start", task="迁移", expect_session_key=K))
    assert valid["ok"] is True and valid["lock_owner"] == "迁移"
    assert valid["message"] == "启动校验通过：任务已绑定到真实目标会话。"
    wrong = _get(owner, "/api/longrun/validate-task-start", task="迁移", expect_session_key=K2)
    assert _ok(wrong, 2)["errors"] == ["origin_session_key_mismatch"]
    states = _get(owner, "/api/longrun/validate-task-start", task="迁移",
                  expect_state=["done", "blocked"])
    assert _ok(states, 2)["expected_states"] == ["blocked", "done"]
    missing = _ok(_get(owner, "/api/longrun/validate-task-start", task="Z"), 1)
    assert missing == {"ok": False, "error": "task_not_found", "task": "Z",
                       "message": "任务不存在，不能视为已启动。"}
    bad = _get(owner, "/api/longrun/validate-task-start", task="迁移", expect_state="running")
    assert _refused(bad, 400, "INVALID_REQUEST", 2) == "invalid state: running"


def test_the_foreground_heartbeat_and_work_cycle(owner, registered):
    check = _ok(_get(owner, "/api/longrun/check-foreground-progress", task="迁移"))
    assert (check["due"], check["reason"]) == (False, "within_window")
    update = _ok(_get(owner, "/api/longrun/build-progress-update", task="迁移"))
    assert update["message"].splitlines()[:3] == [
        "长任务进度提醒：迁移", "当前状态：executing", "正在看：读取迁移日志",
    ]
    tick = _ok(_get(owner, "/api/longrun/foreground-tick", task="迁移"))
    assert tick["due"] is False and tick["message"] is None and tick["sessionKey"] == K
    cycle = _ok(owner.post("/api/longrun/work-cycle-tick", {"task": "迁移", "step": "读完日志"}))
    assert cycle["must_send_now"] is False and cycle["step"] == "读完日志"
    assert cycle["instruction"].startswith("本轮无需汇报")
    # Four minutes later the heartbeat is due: exit 1, and the message to send.
    with _later(minutes=4):
        due = _ok(owner.post("/api/longrun/work-cycle-tick", {"task": "迁移"}), 1)
        assert due["must_send_now"] is True and due["message"].startswith("长任务进度提醒：迁移")
        events = _ok(_get(owner, "/api/longrun/emit-foreground-due"), 1)
        assert events["event_count"] == 1 and events["events"][0]["task"] == "迁移"
        plan = _ok(
            _get(owner, "/api/longrun/dispatch-foreground-due", unknown_cooldown_minutes=5), 1
        )
        assert plan["dispatches"][0]["tool"] == "sessions_send"
    assert not TaskEvent.objects.filter(kind=TaskEvent.QUEUED).exists()  # reports send nothing


def test_keepalive_and_its_run(owner, registered):
    tick = _ok(_get(owner, "/api/longrun/keepalive-tick", task="迁移", idle_seconds=60))
    assert tick["should_resume"] is False and tick["idle_seconds_threshold"] == 60
    none = _ok(_get(owner, "/api/longrun/emit-keepalive-resume", task="迁移"))
    assert none == {"event_count": 0, "events": [], "reason": "still_active"}
    with _later(minutes=2):
        event = _ok(_get(owner, "/api/longrun/emit-keepalive-resume", task="迁移"), 1)
        assert event["events"][0]["kind"] == "keepalive-resume"
        run = _ok(owner.post("/api/longrun/run-keepalive-once", {"idle_seconds": 60}))
        assert run["dispatch_count"] == 1 and run["dispatches"][0]["status"] == "planned"


def test_the_watchdog_reports_and_its_run(owner, registered, settings):
    configure(settings, "delivery", routes={})
    clean = _ok(_get(owner, "/api/longrun/watchdog"))
    assert clean == {"due": [], "progress": [], "ok": ["迁移"]}
    with _later(minutes=11):
        due = _ok(_get(owner, "/api/longrun/watchdog", stale_minutes=10), 1)
        assert [item["reason"] for item in due["due"]] == ["stale_update (10m)"]
        report = _ok(_get(owner, "/api/longrun/recover-due-tasks"), 1)
        assert report["items"][0]["recovery"]["kind"] == "check-progress"
        messages = _ok(_get(owner, "/api/longrun/emit-recovery-message"), 1)
        assert messages["messages"][0]["message"].startswith("长任务回收提醒：迁移")
        payloads = _ok(_get(owner, "/api/longrun/build-sessions-send-payloads"), 1)
        assert payloads["payloads"][0]["timeoutSeconds"] == 30
        assert not TaskEvent.objects.filter(kind=TaskEvent.QUEUED).exists()
        run = _ok(owner.post("/api/longrun/run-watchdog-once", {}), 1)
        assert run["payloads"][0]["status"] == "queued"
    assert TaskEvent.objects.filter(kind=TaskEvent.QUEUED).count() == 1


def test_cleanup_reports_then_applies(owner, registered):
    _ok(owner.post(SET, {**REGISTER, "task": "回归-1", "state": "done"}))
    report = _ok(owner.post("/api/longrun/cleanup-state", {"drop_task": []}))
    assert [item["task"] for item in report["dropped"]] == ["回归-1"] and report["apply"] is False
    assert LongTask.objects.filter(name="回归-1").exists()
    _ok(owner.post("/api/longrun/cleanup-state", {"apply": True}))
    assert not LongTask.objects.filter(name="回归-1").exists()


def _printed(*argv: str) -> tuple[int, Any]:
    """What the command line prints for the same call, read back (exit code, document)."""
    import io

    from longrun.cli import run

    out, err = io.StringIO(), io.StringIO()
    code = run(list(argv), prog="xworkmate-longrun", stdout=out, stderr=err)
    return code, json.loads(out.getvalue() or err.getvalue())


def test_the_scripts_last_differences_answer_alike_here_and_on_the_command_line(owner, db):
    """Issue 23 B: acquire-lock on an unknown task (D-B28), a keyless lock holder and the
    order of lock_repairs in cleanup, release-lock without a task, foreground_tick on a
    task that owes no progress."""
    unknown = owner.post(f"{STATE}/acquire-lock", {"session": K, "task": "nobody"})
    assert _refused(unknown, 404, "NOT_FOUND", 1) == "task not found: nobody"
    assert not SessionLock.objects.exists()
    # Locks taken in the order z, a, m (not the keys' order); C is blocked, without a key.
    _ok(owner.post(SET, {**REGISTER, "task": "回归-z", "origin_session_key": "agent:main:z"}))
    blocked = {key: value for key, value in REGISTER.items() if key != "origin_session_key"}
    _ok(owner.post(SET, {**blocked, "task": "C", "state": "blocked"}))
    _ok(owner.post(f"{STATE}/acquire-lock", {"session": "agent:main:a", "task": "C"}))
    _ok(owner.post(SET, {**REGISTER, "task": "M", "origin_session_key": "agent:main:m"}))
    _ok(owner.post(f"{STATE}/release-lock", {"session": "agent:main:m", "task": "M"}))
    locks = _ok(owner.get(f"{STATE}/locks"))
    assert list(locks.items()) == [("agent:main:z", "回归-z"), ("agent:main:a", "C")]
    assert (0, locks) == _printed("task_state.py", "locks")
    tick = _ok(_get(owner, "/api/longrun/foreground-tick", task="C"))
    assert (0, tick) == _printed("foreground_tick.py", "--task", "C")
    assert tick == {
        "task": "C", "due": False, "check": {"task": "C", "due": False, "reason": "state=blocked"},
        "message": None, "delivery": "session", "sessionKey": None, "session_label": None,
        "state": None,
    }  # fmt: skip
    report = _ok(owner.post("/api/longrun/cleanup-state", {}))
    assert (0, report) == _printed("cleanup_state.py")
    assert report["lock_repairs"] == [
        {"session_key": "agent:main:z", "old_task": "回归-z", "action": "drop_orphan_lock"},
        {"session_key": "agent:main:a", "task": "C",
         "action": "replace_with_task_origin_session_key", "new_session_key": None},
        {"session_key": "agent:main:m", "task": "M", "action": "restore_missing_lock"},
    ]  # fmt: skip
    assert _ok(owner.post("/api/longrun/cleanup-state", {"apply": True})) == report | {
        "apply": True
    }
    assert _ok(owner.get(f"{STATE}/locks")) == {"agent:main:m": "M"}
    released = _ok(owner.post(f"{STATE}/release-lock", {"session": "agent:main:m"}))
    assert released == {"ok": True, "origin_session_key": "agent:main:m", "task": None}
    assert _printed("task_state.py", "release-lock", "--session", "agent:main:m") == (
        1, {"ok": False, "origin_session_key": "agent:main:m", "task": None},
    )  # fmt: skip


@pytest.mark.parametrize(
    ("message", "mode"),
    [("进入长任务模式，帮我迁移数据库", "enter"), ("不要进入长任务模式", "continue"),
     ("继续", "continue")],
)
def test_detect_trigger_with_an_active_task(owner, registered, message, mode):
    answer = owner.post("/api/longrun/detect-trigger", {"message": message, "session_key": K})
    body = _ok(answer, 1)
    assert body["mode"] == mode and body["active_task"] == "迁移"


def test_detect_trigger_without_a_task_is_ordinary(owner, db):
    body = _ok(owner.post("/api/longrun/detect-trigger", {"message": "一直做，不停"}))
    assert body["mode"] == "ordinary" and body["trigger"] is False


# --- scopes --------------------------------------------------------------------------------------

READS = [
    ("GET", f"{STATE}/show?task=A"), ("GET", f"{STATE}/list"), ("GET", f"{STATE}/locks"),
    ("GET", "/api/longrun/validate-task-start?task=A"),
    ("GET", "/api/longrun/check-foreground-progress?task=A"),
    ("GET", "/api/longrun/build-progress-update?task=A"),
    ("GET", "/api/longrun/foreground-tick?task=A"), ("POST", "/api/longrun/work-cycle-tick"),
    ("GET", "/api/longrun/emit-foreground-due"), ("GET", "/api/longrun/dispatch-foreground-due"),
    ("GET", "/api/longrun/keepalive-tick?task=A"),
    ("GET", "/api/longrun/emit-keepalive-resume?task=A"), ("GET", "/api/longrun/watchdog"),
    ("GET", "/api/longrun/recover-due-tasks"), ("GET", "/api/longrun/emit-recovery-message"),
    ("GET", "/api/longrun/build-sessions-send-payloads"),
    ("POST", "/api/longrun/detect-trigger"),
]
WRITES = [
    f"{STATE}/{name}" for name in (
        "set", "touch-progress", "mark-progress-attempt", "mark-progress-sent",
        "mark-progress-unknown", "mark-progress-failed", "mark-visible-reply", "mark-tool-result",
        "mark-resume", "acquire-lock", "release-lock", "clear",
    )
] + ["/api/longrun/run-keepalive-once", "/api/longrun/run-watchdog-once",
     "/api/longrun/cleanup-state"]


def _call(client: ApiClient, verb: str, path: str) -> Any:
    return client.get(path) if verb == "GET" else client.post(path, {"task": "A"})


def test_every_endpoint_needs_its_scope(make_client, anonymous, registered):
    reader = make_client("longrun:read")
    outsider = make_client("plans:write", "gateway:write")
    before = _snapshot()
    for verb, path in READS:
        assert _call(anonymous, verb, path).status_code == 401, path
        assert _refused(_call(outsider, verb, path), 403, "FORBIDDEN") == (
            "API key lacks scope longrun:read"
        ), path
        assert _call(reader, verb, path).status_code != 403, path
    for path in WRITES:
        assert anonymous.post(path, {"task": "迁移"}).status_code == 401, path
        for client in (outsider, reader):
            response = client.post(path, {"task": "迁移", "apply": True})
            assert _refused(response, 403, "FORBIDDEN", 2) == "API key lacks scope longrun:write"
    assert _snapshot() == before


def test_every_longrun_endpoint_is_documented(owner):
    paths = owner.get("/api/schema/?format=json").json()["paths"]
    documented = {path for path in paths if path.startswith("/api/longrun/")}
    expected = {path.split("?")[0] for _, path in READS} | set(WRITES)
    assert documented == expected
    for path in documented:
        for operation in paths[path].values():
            assert operation["tags"] == ["longrun"], path
            assert operation["description"].startswith("Scope: `longrun:"), path
            assert "X-Longrun-Exit-Code" in operation["responses"]["200"]["headers"], path


# --- an agent key: its own session's tasks only ---------------------------------------------------


@pytest.fixture
def theirs(owner) -> dict[str, Any]:
    """A task of another session (K2), which the agent of K must never see or touch."""
    record: dict[str, Any] = _ok(
        owner.post(SET, {**REGISTER, "task": "别人的", "origin_session_key": K2})
    )
    return record


def test_an_agent_works_on_its_own_session_task(db):
    agent = _agent(K)
    keyless = {key: value for key, value in REGISTER.items() if key != "origin_session_key"}
    record = _ok(agent.post(SET, keyless))  # its own session, without naming it
    assert record["origin_session_key"] == K
    assert _ok(_get(agent, "/api/longrun/validate-task-start", task="迁移"))["ok"] is True
    assert _ok(agent.post("/api/longrun/work-cycle-tick", {"task": "迁移"}))["sessionKey"] == K
    assert _ok(agent.post(f"{STATE}/touch-progress", {"task": "迁移"}))["task"] == "迁移"
    assert _ok(agent.post(f"{STATE}/release-lock", {"session": K}))["ok"] is True
    assert _ok(agent.post(f"{STATE}/acquire-lock", {"session": K, "task": "迁移"}))["ok"] is True
    detected = _ok(agent.post("/api/longrun/detect-trigger", {"message": "继续"}), 1)
    assert detected["active_task"] == "迁移"


TASK_READS = [
    f"{STATE}/show", "/api/longrun/check-foreground-progress", "/api/longrun/build-progress-update",
    "/api/longrun/foreground-tick", "/api/longrun/keepalive-tick",
    "/api/longrun/emit-keepalive-resume",
]
TASK_WRITES = [
    f"{STATE}/{name}" for name in (
        "touch-progress", "mark-progress-attempt", "mark-progress-sent", "mark-progress-unknown",
        "mark-progress-failed", "mark-visible-reply", "mark-tool-result", "mark-resume", "clear",
    )
] + ["/api/longrun/work-cycle-tick"]


def test_another_sessions_task_is_not_found_on_every_endpoint(theirs, db):
    agent = _agent(K)
    before = _snapshot()
    for path in TASK_READS:
        assert _refused(_get(agent, path, task="别人的"), 404, "NOT_FOUND", 1) == (
            "task not found: 别人的"
        ), path
    for path in TASK_WRITES:
        response = agent.post(path, {"task": "别人的", "note": "x", "error": "x"})
        assert _refused(response, 404, "NOT_FOUND", 1) == "task not found: 别人的", path
    # `set` of that name, in its own session, takes nothing over.
    taken = agent.post(SET, {**REGISTER, "task": "别人的", "origin_session_key": K})
    assert _refused(taken, 404, "NOT_FOUND", 1) == "task not found: 别人的"
    forced = agent.post(f"{STATE}/acquire-lock", {"session": K, "task": "别人的", "force": True})
    assert _refused(forced, 404, "NOT_FOUND", 1) == "task not found: 别人的"
    validation = _ok(_get(agent, "/api/longrun/validate-task-start", task="别人的"), 1)
    assert validation["error"] == "task_not_found"
    assert _snapshot() == before


def test_naming_another_session_is_forbidden(theirs, db):
    agent = _agent(K)
    before = _snapshot()
    for path, body in (
        (SET, {**REGISTER, "origin_session_key": K2}),
        (f"{STATE}/acquire-lock", {"session": K2, "task": "迁移", "force": True}),
        (f"{STATE}/release-lock", {"session": K2}),
        ("/api/longrun/detect-trigger", {"message": "继续", "session_key": K2}),
    ):
        message = _refused(agent.post(path, body), 403, "FORBIDDEN", 2)
        assert message.endswith(": an agent key acts on its own session only"), path
    assert _snapshot() == before


def test_the_runs_over_every_session_are_the_bridges(theirs, db):
    agent = _agent(K)
    before = _snapshot()
    for path in ("/api/longrun/run-keepalive-once", "/api/longrun/run-watchdog-once",
                 "/api/longrun/cleanup-state", f"{STATE}/clear"):
        message = _refused(agent.post(path, {"apply": True}), 403, "FORBIDDEN", 2)
        assert "a key bound to a session may not run it" in message, path
    assert _snapshot() == before


def test_an_agent_sees_its_sessions_tasks_in_every_report(owner, theirs, db):
    agent = _agent(K)
    _ok(agent.post(SET, REGISTER))
    assert _ok(agent.get(f"{STATE}/list")).startswith("- 迁移 |")
    assert "别人的" not in _ok(agent.get(f"{STATE}/list"))
    assert _ok(agent.get(f"{STATE}/locks")) == {K: "迁移"}
    assert _ok(_get(agent, "/api/longrun/watchdog"))["ok"] == ["迁移"]
    assert _ok(_get(owner, "/api/longrun/watchdog"))["ok"] == ["别人的", "迁移"]
    with _later(minutes=11):
        for path, items in (("recover-due-tasks", "items"), ("emit-recovery-message", "messages"),
                            ("build-sessions-send-payloads", "payloads")):
            answer = _ok(_get(agent, f"/api/longrun/{path}"), 1)
            assert len(answer[items]) == 1
            assert "别人的" not in json.dumps(answer, ensure_ascii=False)
    with _later(minutes=4):
        events = _ok(_get(agent, "/api/longrun/emit-foreground-due"), 1)
        assert [event["task"] for event in events["events"]] == ["迁移"]
        dispatches = _ok(_get(agent, "/api/longrun/dispatch-foreground-due"), 1)
        assert [one["task"] for one in dispatches["dispatches"]] == ["迁移"]


# --- bad input names the field and changes nothing ------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        (SET, {**REGISTER, "goal": 12}, "goal: Not a valid string."),
        (SET, {**REGISTER, "task": "   "}, "task: This field may not be blank."),
        (SET, {**REGISTER, "task": "x" * 201},
         "task: Ensure this field has no more than 200 characters."),
        (SET, {**REGISTER, "progress_every": "0m"},
         "progress_every: must be a duration like 90s, 3m, 2h or 1h30m (each unit at most 4 "
         "digits, not zero)"),
        (SET, {**REGISTER, "progress_every": "5 min"},
         "progress_every: must be a duration like 90s, 3m, 2h or 1h30m (each unit at most 4 "
         "digits, not zero)"),
        (SET, {**REGISTER, "progress_every": "9999h60m"},
         "invalid progress_every: must be at most 9999h"),
        (SET, {**REGISTER, "force_lock": "true"}, "force_lock: Must be a valid boolean."),
        (SET, {key: v for key, v in REGISTER.items() if key != "note"},
         "note: This field is required."),
        (SET, {**REGISTER, "note": "x" * 2001},
         "note: Ensure this field has no more than 2000 characters."),
        (f"{STATE}/touch-progress", {"task": "迁移", "message_hash": "a" * 65},
         "message_hash: Ensure this field has no more than 64 characters."),
        (f"{STATE}/mark-progress-failed", {"task": "迁移", "error": ["x"]},
         "error: Not a valid string."),
        (f"{STATE}/mark-resume", {"task": "迁移", "reason": 1}, "reason: Not a valid string."),
        ("/api/longrun/run-watchdog-once", {"stale_minutes": "10"},
         "stale_minutes: A valid integer is required."),
        ("/api/longrun/run-keepalive-once", {"idle_seconds": 1.5},
         "idle_seconds: A valid integer is required."),
        ("/api/longrun/run-keepalive-once", {"idle_seconds": True},
         "idle_seconds: A valid integer is required."),
        ("/api/longrun/run-keepalive-once", {"idle_seconds": 0},
         "idle_seconds: Ensure this value is greater than or equal to 1."),
        ("/api/longrun/cleanup-state", {"drop_task": "回归-1"},
         'drop_task: Expected a list of items but got type "str".'),
        ("/api/longrun/detect-trigger", {"message": 5}, "message: Not a valid string."),
    ],
)
def test_bad_input_names_the_field_and_writes_nothing(owner, registered, path, body, message):
    before = _snapshot()
    assert _refused(owner.post(path, body), 400, "INVALID_REQUEST", 2) == message
    assert _snapshot() == before


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/api/longrun/watchdog?stale_minutes=0",
         "stale_minutes: Ensure this value is greater than or equal to 1."),
        ("/api/longrun/watchdog?stale_minutes=" + "9" * 5000, "stale_minutes: A valid integer is required."),
        ("/api/longrun/emit-foreground-due?unknown_cooldown_minutes=%C2%B2",
         "unknown_cooldown_minutes: A valid integer is required."),
        ("/api/longrun/keepalive-tick?task=%E8%BF%81%E7%A7%BB&idle_seconds=1.5",
         "idle_seconds: A valid integer is required."),
        (f"{STATE}/show", "task: This field is required."),
    ],
)
def test_bad_queries_name_the_parameter(owner, registered, path, message):
    assert _refused(owner.get(path), 400, "INVALID_REQUEST", 2) == message


@pytest.mark.parametrize(
    "next_check", ["0001-01-01", "9999-12-31T23:59:59-23:59", "99999999999h", "等CI"]
)
def test_a_next_check_outside_the_calendar_sets_no_checkpoint(owner, next_check):
    record = _ok(owner.post(SET, {**REGISTER, "next_check": next_check}))
    assert record["next_check"] == next_check
    assert LongTask.objects.get(name="迁移").next_check_at is None
