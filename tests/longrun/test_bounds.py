"""Long-run mode's bounds: lists and reports page (D-K13), a session's tasks are capped (D-B26).

The cap is attacked from every door: a new task, a task moved in from another
session, a done task reopened, an agent key, the command line. Each refusal
names the field and the rule and writes nothing; the race of two
registrations on PostgreSQL is tests/integration/test_longrun_cap_postgres.py.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from longrun import selectors
from longrun.cli import run
from longrun.models import LongTask, SessionLock, TaskEvent, Transition
from longrun.policies.answers import LongrunError
from longrun.policies.states import joins_session_cap
from tests.conftest import ApiClient, configure
from tests.longrun.conftest import FIELDS, K2, SET_ARGS, K, task_set
from xworkmate.services import KeyBinding, api_key_create

pytestmark = pytest.mark.django_db

EXIT = "X-Longrun-Exit-Code"
STATE = "/api/longrun/task-state"
CAP_RULE = "at most 2 tasks not done per session (longrun.max_live_tasks_per_session)"


def _snapshot() -> list[Any]:
    return [
        list(model.objects.order_by("pk").values())
        for model in (LongTask, SessionLock, Transition, TaskEvent)
    ]


@pytest.fixture
def cap_two(settings: Any) -> None:
    configure(settings, "longrun", max_live_tasks_per_session=2)


def _refusal(name: str, key: str = K, live: int = 2) -> dict[str, Any]:
    return {
        "error": "too many live tasks",
        "origin_session_key": key,
        "requested_task": name,
        "live_tasks": live,
        "max_live_tasks": 2,
        "message": "origin_session_key: a session has at most 2 long tasks that are not done "
        "(longrun.max_live_tasks_per_session); set one done before registering another",
    }


def _capped(name: str, **kwargs: Any) -> LongrunError:
    before = _snapshot()
    with pytest.raises(LongrunError) as refused:
        task_set(name, **kwargs)
    assert _snapshot() == before
    return refused.value


# --- the cap (D-B26) -----------------------------------------------------------------------------


def test_it_refuses_a_task_past_the_session_cap_naming_the_field_and_the_rule(cap_two):
    task_set("A", state="executing")
    task_set("B", state="blocked")
    refused = _capped("C", state="waiting", force_lock=True)
    assert (refused.exit_code, refused.body) == (2, _refusal("C"))
    assert (refused.field, refused.rule) == ("origin_session_key", CAP_RULE)
    # Another session has room; the capped session has room again once a task is done.
    task_set("C", state="blocked", key=K2)
    task_set("B", state="done")
    task_set("D", state="handoff")
    assert sorted(LongTask.objects.values_list("name", flat=True)) == ["A", "B", "C", "D"]


def test_it_counts_every_state_but_done(cap_two):
    task_set("A", state="handoff")
    task_set("B", state="blocked")
    _capped("C", state="blocked")
    task_set("C", state="done")  # a done task takes no place
    assert LongTask.objects.filter(name="C", state="done").exists()


def test_it_refuses_moving_a_task_into_a_full_session_and_reopening_one(cap_two):
    task_set("A", state="blocked")
    task_set("B", state="blocked")
    task_set("elsewhere", state="blocked", key=K2)
    task_set("finished", state="done")
    assert _capped("elsewhere", state="blocked", key=K).body == _refusal("elsewhere")
    assert _capped("finished", state="blocked", reopen=True).body == _refusal("finished")


def test_a_task_already_counted_updates_freely_at_the_cap(cap_two):
    task_set("A", state="executing")
    task_set("B", state="blocked")
    task_set("A", state="waiting", note="等外部")
    task_set("B", state="handoff")
    assert dict(LongTask.objects.values_list("name", "state")) == {"A": "waiting", "B": "handoff"}


def test_the_pure_rule_of_who_counts_one_more():
    assert joins_session_cap(None, K, "blocked")
    assert not joins_session_cap(None, K, "done")
    assert not joins_session_cap(None, "", "executing")  # no session, no cap
    assert joins_session_cap((K2, "executing"), K, "executing")
    assert joins_session_cap((K, "done"), K, "analyzing")
    assert not joins_session_cap((K, "blocked"), K, "executing")


def test_an_agent_key_gets_the_originals_refusal_shape_and_exit_code(cap_two):
    _, token = api_key_create(
        name="agent", scopes=["longrun:write"], binding=KeyBinding(session_key=K, run_id="r")
    )
    agent = ApiClient(token)
    for name in ("A", "B"):
        ok = agent.post(f"{STATE}/set", {"task": name, "state": "blocked", **FIELDS})
        assert ok.status_code == 200, ok.content
    before = _snapshot()
    refused = agent.post(f"{STATE}/set", {"task": "C", "state": "blocked", **FIELDS})
    assert (refused.status_code, refused[EXIT]) == (409, "2")
    assert refused.json()["error"]["code"] == "CONFLICT"
    assert json.loads(refused.json()["error"]["message"]) == _refusal("C")
    assert _snapshot() == before


def test_the_command_line_prints_the_refusal_and_exits_2(cap_two):
    task_set("A", state="blocked")
    task_set("B", state="blocked")
    out, err = io.StringIO(), io.StringIO()
    argv = ["task_state.py", "set", "--task", "C", "--state", "blocked", "--origin-session-key", K]
    code = run([*argv, *SET_ARGS], prog="xworkmate-longrun", stdout=out, stderr=err)
    assert (code, out.getvalue()) == (2, "")
    assert json.loads(err.getvalue()) == _refusal("C")


def test_the_default_cap_is_twenty():
    for index in range(20):
        task_set(f"T{index}", state="blocked")
    assert _capped("T20", state="blocked").body["max_live_tasks"] == 20


# --- paging (D-K13) ------------------------------------------------------------------------------


def _get(client: ApiClient, path: str) -> Any:
    response = client.get(path)
    assert response.status_code == 200, response.content
    return response


def test_it_pages_the_task_list_and_says_where_the_next_page_starts(owner):
    for index in range(5):
        task_set(f"T{index}", state="blocked", key=f"agent:main:{index}")
    first = _get(owner, f"{STATE}/list?limit=2")
    assert [line.split(" | ")[0] for line in first.json().splitlines()] == ["- T0", "- T1"]
    assert (first["X-Total-Count"], first["X-Next-Offset"], first[EXIT]) == ("5", "2", "0")
    last = _get(owner, f"{STATE}/list?limit=2&offset=4")
    assert [line.split(" | ")[0] for line in last.json().splitlines()] == ["- T4"]
    assert last["X-Total-Count"] == "5" and not last.has_header("X-Next-Offset")
    assert _get(owner, f"{STATE}/list?offset=5").json() == "no tasks"
    whole = _get(owner, f"{STATE}/list")
    assert len(whole.json().splitlines()) == 5 and not whole.has_header("X-Next-Offset")


def test_it_pages_the_lock_table_by_session_key(owner):
    for index in range(3):
        task_set(f"T{index}", state="executing", key=f"agent:main:{index}")
    first = _get(owner, f"{STATE}/locks?limit=2")
    assert first.json() == {"agent:main:0": "T0", "agent:main:1": "T1"}
    assert (first["X-Total-Count"], first["X-Next-Offset"]) == ("3", "2")
    assert _get(owner, f"{STATE}/locks?limit=2&offset=2").json() == {"agent:main:2": "T2"}


@pytest.mark.parametrize(
    "path",
    [
        "/api/longrun/watchdog",
        "/api/longrun/recover-due-tasks",
        "/api/longrun/emit-recovery-message",
        "/api/longrun/build-sessions-send-payloads",
        "/api/longrun/emit-foreground-due",
        "/api/longrun/dispatch-foreground-due",
    ],
)
def test_it_pages_the_reports_that_survey_every_task(owner, path):
    for index in range(3):
        task_set(f"T{index}", state="done", key=f"agent:main:{index}")
    first = _get(owner, f"{path}?limit=2")
    assert (first["X-Total-Count"], first["X-Next-Offset"]) == ("3", "2")
    last = _get(owner, f"{path}?limit=2&offset=2")
    assert last["X-Total-Count"] == "3" and not last.has_header("X-Next-Offset")
    if path == "/api/longrun/watchdog":
        assert (first.json()["ok"], last.json()["ok"]) == (["T0", "T1"], ["T2"])


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("limit=0", "limit: must be an integer from 1 to 500"),
        ("limit=501", "limit: must be an integer from 1 to 500"),
        ("limit=" + "9" * 5000, "limit: must be an integer from 1 to 500"),
        ("limit=²", "limit: must be an integer from 1 to 500"),
        ("limit=1.0", "limit: must be an integer from 1 to 500"),
        ("offset=-1", "offset: must be an integer from 0 to 1000000000"),
        ("limit=2&limit=3", "limit: given more than once (it takes one value)"),
    ],
)
@pytest.mark.parametrize("path", [f"{STATE}/list", f"{STATE}/locks", "/api/longrun/watchdog"])
def test_it_refuses_a_page_out_of_range_naming_the_parameter(owner, path, query, message):
    task_set("A")
    response = owner.get(f"{path}?{query}")
    assert (response.status_code, response[EXIT]) == (400, "2")
    assert response.json() == {"error": {"code": "INVALID_REQUEST", "message": message}}


def test_an_agent_key_pages_its_own_session_only(owner):
    task_set("mine", state="blocked", key=K)
    task_set("theirs", state="blocked", key=K2)
    _, token = api_key_create(
        name="agent", scopes=["longrun:read"], binding=KeyBinding(session_key=K, run_id="r")
    )
    listed = _get(ApiClient(token), f"{STATE}/list?limit=1")
    assert listed.json().startswith("- mine |") and listed["X-Total-Count"] == "1"
    assert not listed.has_header("X-Next-Offset")
    assert selectors.tasks_list().body.count("\n") == 1  # the command line still lists all
