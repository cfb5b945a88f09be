"""Studio's plan update (§6, issue 23 A4): PUT /api/plans/<id> takes `name` and/or `enabled`."""

from __future__ import annotations

from typing import Any

import pytest

from plans.models import Job, Revision
from tests.conftest import ApiClient
from tests.plans.test_plans_api import BODY, _error

pytestmark = pytest.mark.django_db


def _put(client: ApiClient, task: str, body: Any, *, raw: str | None = None) -> Any:
    return client.put(f"/api/plans/{task}", body, raw=raw)


@pytest.fixture
def scheduled(owner: ApiClient, workspace: Any) -> str:
    task: str = owner.post("/api/plans/propose", BODY).json()["plan"]["taskId"]
    confirmed = owner.post(f"/api/plans/{task}/confirm",
                           {"revision": 1, "message": "确认", "turnId": "run-2"})
    assert confirmed.status_code == 200, confirmed.json()
    return task


def _stored(task: str) -> tuple[Any, ...]:
    job = Job.objects.get(entry__task_id=task)
    return (job.name, job.enabled, job.next_run_at, job.schedule, job.delivery,
            job.updated_at_ms, Revision.objects.count())


def test_it_renames_the_job_and_pauses_and_resumes_it_without_touching_the_schedule(
    owner, scheduled, workspace
):
    plan_file = (workspace / "archives/chat-1/PLAN.md").read_text()
    schedule = Job.objects.get(entry__task_id=scheduled).schedule
    renamed = _put(owner, scheduled, {"name": "  库存日报（新）  "})
    assert renamed.status_code == 200, renamed.json()
    assert renamed.json()["plan"]["job"]["name"] == "库存日报（新）"
    paused = _put(owner, scheduled, {"enabled": False}).json()["plan"]
    assert paused["state"] == "PAUSED" and paused["displayStatus"]["label"] == "已暂停"
    assert "nextRunAtMs" not in paused["job"]["state"]
    both = _put(owner, scheduled, {"name": "日报", "enabled": True}).json()["plan"]
    assert both["state"] == "SCHEDULED" and both["job"]["name"] == "日报"
    assert both["job"]["state"]["nextRunAtMs"] > 0
    job = Job.objects.get(entry__task_id=scheduled)
    assert job.schedule == schedule and Revision.objects.count() == 1
    assert (workspace / "archives/chat-1/PLAN.md").read_text() == plan_file


@pytest.mark.parametrize(
    ("body", "raw", "message"),
    [
        # Refused by the body reader as every API body is, before Studio's own check.
        (None, "[1, 2]", "request body must be a JSON object (got array)"),
        ({}, None, "Request body must contain only `name` and/or `enabled`"),
        ({"name": "x", "schedule": {"kind": "every", "everyMs": 60000}}, None,
         "Request body must contain only `name` and/or `enabled`"),
        ({"enabled": False, "delivery": {"mode": "none"}}, None,
         "Request body must contain only `name` and/or `enabled`"),
        ({"name": "   "}, None, "name must be a non-empty string when provided"),
        ({"name": 7}, None, "name must be a non-empty string when provided"),
        ({"name": None}, None, "name must be a non-empty string when provided"),
        ({"enabled": "false"}, None, "enabled must be a boolean when provided"),
        ({"enabled": 0}, None, "enabled must be a boolean when provided"),
        ({"name": "x" * 501}, None, "name must be at most 500 characters"),
    ],
)
def test_it_refuses_anything_but_a_name_and_a_flag_with_studios_words_and_changes_nothing(
    owner, scheduled, body, raw, message
):
    before = _stored(scheduled)
    assert _error(_put(owner, scheduled, body, raw=raw), 400, "INVALID_REQUEST") == message
    assert _stored(scheduled) == before


def test_it_needs_plans_write_and_an_agent_key_reaches_only_its_own_session(
    owner, make_client, scheduled
):
    reader = make_client("plans:read", name="reader")
    refused = _put(reader, scheduled, {"enabled": False})
    assert refused.status_code == 403
    assert refused.json()["error"]["message"] == "API key lacks scope plans:write"
    assert reader.get(f"/api/plans/{scheduled}").status_code == 200  # reading stays plans:read
    from tests.plans.test_plans_api import _agent

    stranger = _agent(session="agent:ops:user:u-2:direct:chat-9", name="stranger")
    assert _put(stranger, scheduled, {"enabled": False}).status_code == 404
    assert Job.objects.get(entry__task_id=scheduled).enabled is True


def test_a_plan_without_a_job_is_refused_as_pause_is(owner, workspace):
    task = owner.post("/api/plans/propose", BODY).json()["plan"]["taskId"]
    response = _put(owner, task, {"enabled": False})
    assert response.status_code == 409
    assert "job: this plan has no schedule" in response.json()["error"]["message"]


def test_the_update_is_in_the_openapi_schema(owner):
    paths = owner.get("/api/schema/?format=json").json()["paths"]
    assert "put" in paths["/api/plans/{task_id}"]


def test_studios_own_object_check_holds_for_a_caller_past_the_body_reader():
    from plans.api.jobs import plan_update_input
    from xworkmate.lib.errors import InputError

    with pytest.raises(InputError, match="^Request body must be a JSON object$"):
        plan_update_input(["name"])
    assert plan_update_input({"name": " a ", "enabled": True}) == ("a", True)
    assert plan_update_input({"enabled": False}) == (None, False)
