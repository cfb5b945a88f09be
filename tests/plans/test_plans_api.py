"""The plans REST API: every operation, its scopes, and an agent key's confinement (§11 G)."""

from __future__ import annotations

from typing import Any

import pytest

from plans.models import Confirmation, Entry, Job, Plan, Revision
from tests.conftest import ApiClient
from xworkmate.services import KeyBinding, api_key_create

pytestmark = pytest.mark.django_db

SESSION = "agent:ops:user:u-1:direct:chat-1"
BODY: dict[str, Any] = {
    "sessionKey": SESSION,
    "turnId": "run-1",
    "taskName": "每日库存巡检日报",
    "persona": "库存管理助理",
    "objective": "每天发现库存异常",
    "result": "每天 9 点前生成日报",
    "steps": ["每天 09:00 读取库存表并生成日报"],
    "schedule": {"kind": "cron", "expr": "0 9 * * *", "tz": "Asia/Shanghai"},
}


def _agent(session: str = SESSION, run: str = "run-1", name: str | None = None) -> ApiClient:
    _, token = api_key_create(
        name=name or f"agent-{abs(hash((session, run)))}",
        scopes=["plans:write"],
        binding=KeyBinding(session_key=session, run_id=run),
    )
    return ApiClient(token)


@pytest.fixture
def proposed(owner, workspace) -> dict[str, Any]:
    response = owner.post("/api/plans/propose", BODY)
    assert response.status_code == 201, response.json()
    plan: dict[str, Any] = response.json()["plan"]
    return plan


def _error(response: Any, status: int, code: str) -> str:
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"error"} and body["error"]["code"] == code
    return str(body["error"]["message"])


def test_5_a_proposal_answers_the_plan_awaiting_confirmation(proposed, workspace):
    assert proposed["state"] == "AWAITING_PLAN_CONFIRMATION"
    assert proposed["awaitingConfirmation"] is True
    assert proposed["archiveId"] == "chat-1" and proposed["planPath"] == "archives/chat-1/PLAN.md"
    assert proposed["revision"]["number"] == 1 and proposed["revision"]["turnId"] == "run-1"
    assert "job" not in proposed and "confirmedRevision" not in proposed
    assert proposed["reviewUrl"].startswith("http://testserver/admin/plans/entry/")
    assert (workspace / "archives" / "chat-1" / "PLAN.md").is_file()
    assert not Job.objects.exists()


def test_7_the_users_confirmation_relayed_in_a_later_turn_creates_the_job(owner, proposed):
    task = proposed["taskId"]
    same_turn = owner.post(
        f"/api/plans/{task}/confirm", {"revision": 1, "message": "确认", "turnId": "run-1"}
    )
    assert _error(same_turn, 409, "REFUSED").startswith("F1:")
    response = owner.post(
        f"/api/plans/{task}/confirm", {"revision": 1, "message": "确认", "turnId": "run-2"}
    )
    assert response.status_code == 200, response.json()
    plan = response.json()["plan"]
    assert plan["state"] == "SCHEDULED" and plan["confirmedRevision"] == 1
    job = plan["job"]
    assert (job["sessionTarget"], job["payload"]["kind"]) == ("isolated", "agentTurn")
    assert job["delivery"] == {"mode": "none", "bestEffort": True}
    assert plan["displayStatus"] == {"code": "pending", "label": "待执行"}
    assert job["state"]["nextRunAtMs"] > 0


def test_an_agent_key_speaks_for_its_own_session_and_run_only(workspace, db):
    writer = _agent()
    body = {k: v for k, v in BODY.items() if k not in ("sessionKey", "turnId")}
    response = writer.post("/api/plans/propose", body)
    assert response.status_code == 201, response.json()
    plan = response.json()["plan"]
    assert plan["sessionKey"] == SESSION and plan["revision"]["turnId"] == "run-1"
    task = plan["taskId"]
    # The writing run cannot confirm, whatever turn it claims (F1 by construction).
    assert _error(
        writer.post(f"/api/plans/{task}/confirm", {"revision": 1, "message": "确认"}),
        409,
        "REFUSED",
    ).startswith("F1:")
    claimed = writer.post(
        f"/api/plans/{task}/confirm", {"revision": 1, "message": "确认", "turnId": "run-2"}
    )
    assert _error(claimed, 403, "FORBIDDEN").startswith("turnId: an agent key")
    other = _error(
        writer.post("/api/plans/propose", {**body, "sessionKey": "agent:x:y"}), 403, "FORBIDDEN"
    )
    assert other.startswith("sessionKey:")
    # Another session's agent sees nothing of it.
    stranger = _agent("agent:ops:user:u-2:direct:chat-2", "run-9")
    assert _error(stranger.get(f"/api/plans/{task}"), 404, "NOT_FOUND") == "Plan not found"
    assert _error(
        stranger.post(f"/api/plans/{task}/confirm", {"revision": 1, "message": "确认"}),
        404,
        "NOT_FOUND",
    )
    assert stranger.get("/api/plans").json()["plans"] == []
    assert not Confirmation.objects.exists()
    # The same session's next run relays the user's confirmation.
    later = _agent(SESSION, "run-2")
    response = later.post(
        f"/api/plans/{task}/confirm", {"revision": 1, "message": "可以创建定时任务了"}
    )
    assert response.status_code == 200, response.json()
    assert Confirmation.objects.get().turn_id == "run-2"


def test_scopes_are_required(reader, outsider, proposed):
    task = proposed["taskId"]
    _error(reader.get("/api/plans"), 403, "FORBIDDEN")
    assert outsider.get(f"/api/plans/{task}").status_code == 200
    _error(
        outsider.post(
            f"/api/plans/{task}/confirm", {"revision": 1, "message": "确认", "turnId": "t"}
        ),
        403,
        "FORBIDDEN",
    )


@pytest.mark.parametrize(
    ("changes", "names"),
    [
        ({"objective": ""}, "objective"),
        ({"steps": []}, "steps"),
        ({"schedule": {"kind": "cron", "expr": "0 9 * *"}}, "schedule"),
        ({"schedule": {"kind": "every", "everyMs": 5}}, "schedule.everyMs"),
        ({"taskName": 7}, "taskName"),
        ({"turnId": ""}, "turnId"),
        ({"sessionKey": 7}, "sessionKey"),  # blank: the archive receipt (below)
        ({"objective": "第一行\n第二行"}, "objective: must be one line"),
        ({"steps": ["读取 {{TASK_UUID}}"]}, "steps: 0: must not contain { or }"),
    ],
)
def test_bad_input_names_the_field_and_writes_nothing(owner, workspace, changes, names):
    message = _error(owner.post("/api/plans/propose", {**BODY, **changes}), 400, "INVALID_REQUEST")
    assert names in message
    assert not Plan.objects.exists() and not (workspace / "archives").exists()


def test_92_runs_are_paged_and_a_bad_limit_is_refused(owner, proposed):
    task = proposed["taskId"]
    assert _error(owner.get(f"/api/plans/{task}/runs?limit=201"), 400, "INVALID_REQUEST") == (
        "Invalid query parameter `limit`"
    )
    answer = owner.get(f"/api/plans/{task}/runs").json()
    assert answer == {
        "entries": [],
        "total": 0,
        "offset": 0,
        "limit": 50,
        "hasMore": False,
        "nextOffset": None,
    }
    owner.post(f"/api/plans/{task}/confirm", {"revision": 1, "message": "确认", "turnId": "run-2"})
    assert owner.post(f"/api/plans/{task}/run", {"mode": "due"}).json() == {
        "ok": True,
        "ran": False,
        "reason": "not-due",
    }
    assert owner.post(f"/api/plans/{task}/run", {}).json() == {"ok": True, "ran": True}
    [entry] = owner.get(f"/api/plans/{task}/runs").json()["entries"]
    assert (entry["action"], entry["status"], entry["forced"]) == ("started", "running", True)


def test_89_content_is_the_plan_md_on_disk(owner, proposed, workspace):
    task = proposed["taskId"]
    path = workspace / "archives" / "chat-1" / "PLAN.md"
    assert owner.get(f"/api/plans/{task}/content").json() == {"content": path.read_text()}
    path.unlink()
    assert _error(owner.get(f"/api/plans/{task}/content"), 404, "NOT_FOUND") == "PLAN.md not found"


def test_d_c9_a_confirmed_plan_exports_as_cron_add(owner, proposed):
    task = proposed["taskId"]
    _error(owner.get(f"/api/plans/{task}/export"), 409, "REFUSED")
    owner.post(f"/api/plans/{task}/confirm", {"revision": 1, "message": "确认", "turnId": "run-2"})
    request = owner.get(f"/api/plans/{task}/export").json()["request"]
    assert request == {
        "name": "每日库存巡检日报",
        "agentId": "ops",
        "sessionKey": SESSION,
        "schedule": {"kind": "cron", "expr": "0 9 * * *", "tz": "Asia/Shanghai"},
        "sessionTarget": "isolated",
        "wakeMode": "now",
        "payload": {
            "kind": "agentTurn",
            "message": f"从路径 archives/chat-1/PLAN.md 中读取 Task_ID: {task} 的详细计划并按步骤执行",
        },
        "delivery": {"mode": "none", "bestEffort": True},
    }


def test_revise_request_changes_pause_resume_cancel(owner, proposed, workspace):
    task = proposed["taskId"]
    changed = owner.post(
        f"/api/plans/{task}/request-changes",
        {"revision": 1, "message": "改成 8 点", "turnId": "run-2"},
    )
    assert changed.json()["plan"]["state"] == "REVISING"
    revised = owner.post(
        f"/api/plans/{task}/revise",
        {
            "turnId": "run-2",
            "objective": "每天 8 点发现库存异常",
            "schedule": {"kind": "cron", "expr": "0 8 * * *", "tz": "Asia/Shanghai"},
        },
    )
    assert revised.status_code == 200, revised.json()
    assert revised.json()["plan"]["revision"]["number"] == 2
    stale = owner.post(
        f"/api/plans/{task}/confirm", {"revision": 1, "message": "确认", "turnId": "run-3"}
    )
    assert _error(stale, 409, "REFUSED").startswith("D-C3:")
    owner.post(f"/api/plans/{task}/confirm", {"revision": 2, "message": "确认", "turnId": "run-3"})
    paused = owner.post(f"/api/plans/{task}/pause").json()["plan"]
    assert paused["displayStatus"]["label"] == "已暂停" and paused["state"] == "PAUSED"
    resumed = owner.post(f"/api/plans/{task}/resume").json()["plan"]
    assert resumed["state"] == "SCHEDULED"
    cancelled = owner.post(f"/api/plans/{task}/cancel", {"turnId": "run-4"}).json()["plan"]
    assert cancelled["state"] == "REMOVED" and cancelled["revision"]["number"] == 3
    assert "- **Status**: Cancelled" in (workspace / "archives/chat-1/PLAN.md").read_text()
    assert Revision.objects.count() == 3 and Entry.objects.count() == 1


def test_4_the_clarification_check(outsider):
    good = "预设基准方案：每天 9 点。\nA. 每天 9 点\nB. 工作日 8:30\n其他：[由用户补充]"
    assert outsider.post("/api/plans/clarification-check", {"reply": good}).json() == {
        "ok": True,
        "problems": [],
    }
    answer = outsider.post("/api/plans/clarification-check", {"reply": "你想怎么做？"}).json()
    assert answer["ok"] is False and len(answer["problems"]) == 3


def test_every_plans_operation_is_in_the_openapi_schema(owner):
    paths = owner.get("/api/schema/?format=json").json()["paths"]
    for path, method in [
        ("/api/plans", "get"),
        ("/api/plans/propose", "post"),
        ("/api/plans/{task_id}", "get"),
        ("/api/plans/{task_id}/content", "get"),
        ("/api/plans/{task_id}/runs", "get"),
        ("/api/plans/{task_id}/export", "get"),
        ("/api/plans/{task_id}/revise", "post"),
        ("/api/plans/{task_id}/confirm", "post"),
        ("/api/plans/{task_id}/request-changes", "post"),
        ("/api/plans/{task_id}/pause", "post"),
        ("/api/plans/{task_id}/resume", "post"),
        ("/api/plans/{task_id}/cancel", "post"),
        ("/api/plans/{task_id}/run", "post"),
        ("/api/plans/clarification-check", "post"),
    ]:
        assert method in paths[path], path


def test_a_task_id_that_is_no_uuid_is_the_json_404(owner):
    response = owner.get("/api/plans/not-a-uuid/runs")
    assert response.status_code == 404 and response["Content-Type"] == "application/json"


def test_the_list_costs_the_same_statements_for_one_plan_or_many(owner, workspace, django_assert_max_num_queries):
    for turn in range(6):
        response = owner.post("/api/plans/propose", {**BODY, "turnId": f"run-{turn}"})
        assert response.status_code == 201
    # Key lookup, count, page, jobs (and the session's savepoint bookkeeping): not one per plan.
    with django_assert_max_num_queries(6):
        answer = owner.get("/api/plans?limit=6").json()
    assert answer["total"] == 6 and len(answer["plans"]) == 6


def test_32_31_a_job_sent_as_openclaw_would_is_checked_and_its_message_kept(owner, workspace):
    wrong = {**BODY, "job": {"sessionTarget": "main", "payload": {"kind": "systemEvent", "text": "x"}}}
    message = _error(owner.post("/api/plans/propose", wrong), 400, "INVALID_REQUEST")
    assert 'job.sessionTarget: must be "isolated" (D-C7)' in message
    second = {**BODY, "job": {"payload": {"kind": "agentTurn", "message": "你好。从路径 archives/chat-1/PLAN.md"}}}
    assert "message: the first instruction" in _error(owner.post("/api/plans/propose", second), 400,
                                                      "INVALID_REQUEST")
    assert not Plan.objects.exists()
    instruction = "从路径 archives/chat-1/PLAN.md 中读取 Task_ID: {{TASK_UUID}} 的详细计划并按步骤执行"
    good = {**BODY, "job": {"sessionTarget": "isolated", "wakeMode": "now",
                            "payload": {"kind": "agentTurn", "message": f"  {instruction}。然后发送摘要"},
                            "delivery": {"mode": "none", "bestEffort": True}}}
    plan = owner.post("/api/plans/propose", good).json()["plan"]
    assert plan["message"] == instruction.replace("{{TASK_UUID}}", plan["taskId"]) + "。然后发送摘要"


@pytest.mark.parametrize("session", ["agent:ops:" + "x" * 300, "agent:" + "a" * 300 + ":x"])
def test_a_session_no_archive_can_be_named_after_is_blocked(owner, workspace, session):
    message = _error(owner.post("/api/plans/propose", {**BODY, "sessionKey": session}), 409, "BLOCKED")
    assert message.startswith("ARCHIVE_STATUS: BLOCKED\nARCHIVE_REASON: invalid Session (")
    assert not Plan.objects.exists()


def test_a_turn_longer_than_a_turn_may_be_is_refused_on_every_action(owner, proposed):
    for action in ("cancel", "pause", "resume"):
        response = owner.post(f"/api/plans/{proposed['taskId']}/{action}", {"turnId": "0" * 201})
        assert "turnId" in _error(response, 400, "INVALID_REQUEST")
    assert Entry.objects.get().state == "AWAITING_PLAN_CONFIRMATION"


@pytest.mark.parametrize(
    "body",
    [{"sessionKey": ""}, {"sessionKey": "   "}, {}, {"sessionKey": "unknown"},
     {"sessionKey": ":::"}, {"sessionKey": "🧵 Session:  • updated 2m ago"}],
    ids=["empty", "blank", "missing", "unknown", "no-segment", "empty-status-line"],
)
def test_a_blank_or_unknown_session_gets_the_archive_receipt_and_nothing_is_written(
    owner, workspace, body
):
    # Issue 23 A7 (§5.6): the archive protocol's own receipt, never a generic 400.
    proposal = {k: v for k, v in BODY.items() if k != "sessionKey"} | body
    message = _error(owner.post("/api/plans/propose", proposal), 409, "BLOCKED")
    assert message == "ARCHIVE_STATUS: BLOCKED\nARCHIVE_REASON: invalid Session"
    assert not Plan.objects.exists() and not (workspace / "archives").exists()
