"""The one Caller (D-K12): who calls, what it may touch, and how every log names it."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.utils import timezone
from rest_framework.exceptions import PermissionDenied, ValidationError

from longrun.models import Transition
from plans.models import Revision
from tests.conftest import ApiClient, configure
from xworkmate.auth import TURN_HELP, Caller
from xworkmate.delivery.services import outbox_enqueue
from xworkmate.models import ApiKey
from xworkmate.services import KeyBinding, api_key_create

AGENT = ApiKey(
    name="agent",
    scopes=["plans:write"],
    bound_session_key="s1",
    bound_run_id="r1",
    bound_workspace_dir="/ws",
    bound_artifact_scope="tasks/s1/r1",
)
BRIDGE = ApiKey(name="bridge", scopes=["gateway:read", "plans:write"])


def test_it_takes_an_agent_keys_binding_and_names_it_by_the_key():
    agent = Caller.for_key(AGENT)
    assert (agent.name, str(agent), agent.is_agent, agent.confined_to) == (
        "api-key:agent", "api-key:agent", True, "s1",
    )
    assert (agent.bound_run, agent.bound_workspace, agent.bound_artifact_scope) == (
        "r1", "/ws", "tasks/s1/r1",
    )
    bridge = Caller.for_key(BRIDGE)
    assert (bridge.name, bridge.is_agent, bridge.confined_to, bridge.bound_run) == (
        "api-key:bridge", False, None, "",
    )


def test_it_grants_a_keys_scopes_with_write_implying_read_and_nothing_to_anyone_else():
    bridge = Caller.for_key(BRIDGE)
    assert bridge.may("plans:read") and bridge.may("plans:write") and bridge.may("gateway:read")
    assert not bridge.may("gateway:write") and not bridge.may("longrun:read")
    staff = User(username="olga", is_staff=True)
    for nobody in (Caller.for_person(staff), Caller.command_line(), Caller.for_person(None)):
        assert not nobody.may("gateway:read") and not nobody.is_agent


def test_it_names_a_person_the_command_line_and_nobody_each_one_way():
    person = Caller.for_person(User(username="olga", is_staff=True))
    assert (person.name, person.is_staff, person.key) == ("user:olga", True, None)
    assert Caller.for_person(User(username="ivan")).is_staff is False
    assert Caller.command_line().name == "cli"
    anonymous = Caller.for_person(AnonymousUser())
    assert (anonymous.name, anonymous.person, anonymous.is_staff) == ("anonymous", None, False)


def test_it_makes_an_agent_key_speak_for_its_own_run_only():
    agent = Caller.for_key(AGENT)
    assert agent.turn("") == agent.turn("r1") == "r1"
    with pytest.raises(PermissionDenied) as refused:
        agent.turn("r0")
    assert str(refused.value.detail) == "turnId: an agent key speaks for its own run only"
    bridge = Caller.for_key(BRIDGE)
    assert bridge.turn("t-7") == "t-7"
    with pytest.raises(ValidationError) as missing:
        bridge.turn("")
    assert missing.value.detail == {"turnId": TURN_HELP}


def test_it_keeps_an_agent_key_in_its_own_session():
    agent = Caller.for_key(AGENT)
    assert agent.session("", "session") == agent.session(" s1\u3000", "session") == "s1"
    with pytest.raises(PermissionDenied) as refused:
        agent.session("s2", "origin_session_key")
    assert str(refused.value.detail) == "origin_session_key: an agent key acts on its own session only"
    with pytest.raises(PermissionDenied) as worded:
        agent.session("s2", "sessionKey", refusal="sessionKey: its own")
    assert str(worded.value.detail) == "sessionKey: its own"
    assert Caller.for_key(BRIDGE).session(" s2 ", "session") == " s2 "


# --- the wire keeps its messages, and the logs their names ------------------------------------


@pytest.fixture
def agent(db: None) -> ApiClient:
    _, token = api_key_create(
        name="agent-1",
        scopes=["plans:write", "delivery:write", "longrun:write"],
        binding=KeyBinding(session_key="s1", run_id="r1"),
    )
    return ApiClient(token)


def _refusal(response: Any) -> str:
    assert response.status_code == 403, response.content
    assert response.json()["error"]["code"] == "FORBIDDEN"
    return str(response.json()["error"]["message"])


_PROPOSAL = {
    "taskName": "巡检", "persona": "助理", "objective": "发现异常", "result": "日报",
    "steps": ["读取库存表"], "schedule": {"kind": "cron", "expr": "0 9 * * *", "tz": "UTC"},
}


def test_it_answers_an_agent_keys_trespass_with_each_areas_own_message(agent, settings, tmp_path):
    configure(settings, "plans", workspace=str(tmp_path))
    other = agent.post("/api/plans/propose", {**_PROPOSAL, "sessionKey": "s2"})
    assert _refusal(other) == "sessionKey: an agent key proposes in its own session only"
    turn = agent.post("/api/plans/propose", {**_PROPOSAL, "turnId": "r0"})
    assert _refusal(turn) == "turnId: an agent key speaks for its own run only"
    pending = agent.get("/api/delivery/pending?sessionKey=s2")
    assert _refusal(pending) == (
        "an agent key fetches and acknowledges its own session's messages only"
    )
    assert not Revision.objects.exists()


def test_it_records_an_agent_keys_name_in_the_plan_the_task_log_and_the_ack(agent, settings, tmp_path):
    configure(settings, "plans", workspace=str(tmp_path))
    assert agent.post("/api/plans/propose", _PROPOSAL).status_code == 201
    assert Revision.objects.get().written_by == "api-key:agent-1"
    answer = agent.post("/api/longrun/task-state/set", {
        "task": "A", "session": "s", "state": "analyzing", "goal": "g", "done_when": "d",
        "blocked_when": "b", "boundary": "x", "next_check": "10m", "note": "n",
    })
    assert answer.status_code == 200, answer.content
    assert set(Transition.objects.values_list("by", flat=True)) == {"api-key:agent-1"}
    message = outbox_enqueue(purpose="longrun.progress", target="s1", body="进展",
                             idempotency_key="m1", now=timezone.now())
    assert agent.post(f"/api/delivery/{message.pk}/ack").status_code == 200
    assert message.attempts.get().by == "api-key:agent-1"
