"""The OpenAPI schema tells the truth on every app (issue 17 §8, D-K15): schemathesis finds nothing.

Bridge developers generate clients from `/api/schema/`. schemathesis reads that
schema from gunicorn (on PostgreSQL, as in production), generates requests
the schema calls valid and requests it calls invalid for every operation, and
runs all of its checks on the answers: valid requests are accepted, invalid
ones refused, and every status, content type, header and body is one the
schema documents. A fixed seed keeps the run deterministic; CI runs a small
example count, `scripts/schemathesis [EXAMPLES]` the same test with more.

One key holding every scope runs every operation; an agent key (bound to the
prepared run) then runs the agent tool, which only it may call. What a schema
cannot say is the service's state: a workspace must lie inside a configured
root, a ref must be one the service signed for that run, a plan must be
awaiting confirmation to be confirmed, a long task must be registered to be
reported on. So before schemathesis starts, the test builds that state
through the API itself (a prepared run and its ref, plans in each state an
operation acts on, a registered long task per operation, a delivery message
waiting for its ack), and hooks (schemathesis_state.py) put those real values
into the fields whose validity is such state. Each operation must then have
answered 2xx at least once: a run that only ever met 404s proves nothing of
an operation's own validation.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import running_gunicorn
from xworkmate.policies import SCOPES
from xworkmate.services import KeyBinding, api_key_create

SEED = 9011
# CI's bound: about two minutes for the whole run (scripts/schemathesis raises it).
MAX_EXAMPLES = int(os.environ.get("XWORKMATE_SCHEMATHESIS_EXAMPLES", "25"))
SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
SESSION, RUN = "agent:main:schema-check", "run-1"
SCOPE = "tasks/agent_main_schema-check/run-1"
HOOKS = Path(__file__).with_name("schemathesis_state.py")

# Operations that wipe what the others need (every long task, or tasks by prefix):
# schemathesis runs them last, in a run of their own.
LAST = ("/api/longrun/task-state/clear", "/api/longrun/cleanup-state")
# What needs an agent key (the bridge's is refused with 403 there).
AGENT_ONLY = ("/api/artifacts/tool",)


@dataclass(frozen=True)
class Server:
    base: str
    workspace: Path
    log: Path


@pytest.fixture
def server(real_services: None, tmp_path: Path) -> Iterator[Server]:
    root = Path(os.path.realpath(tmp_path))
    workspace = root / "ws"
    workspace.mkdir()
    config = (
        f'[workspace]\nroots = ["{workspace}"]\n\n'
        f'[artifacts]\nopenclaw_media_dir = "{root / "media"}"\n'
        f'openclaw_tmp_dir = "{root / "tmp-openclaw"}"\n'
    )
    with running_gunicorn(tmp_path, config, workers=4) as base:
        yield Server(base, workspace, tmp_path / "gunicorn.log")


# --- the service's state, built through its own API ----------------------------------------------


def _call(base: str, token: str, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    request = urllib.request.Request(
        base + path, data=None if body is None else json.dumps(body).encode(), method=method,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def _a_run_with_a_file(server: Server, token: str) -> str:
    """Prepare the run, give it a file and a fallback dir, and answer the file's ref."""
    ids = {"openclawSessionKey": SESSION, "runId": RUN}
    prepared = _call(server.base, token, "POST", "/gateway/xworkmate.session.prepare",
                     {**ids, "appThreadKey": "schema-check", "expectedArtifactDirs": ["reports"]})
    Path(prepared["payload"]["artifactDirectory"], "report.md").write_text("# Report\n")
    (server.workspace / "reports").mkdir()
    (server.workspace / "reports" / "summary.txt").write_text("fallback\n")
    listed = _call(server.base, token, "POST", "/gateway/xworkmate.artifacts.list", ids)
    (artifact,) = listed["payload"]["artifacts"]
    assert (artifact["relativePath"], artifact["artifactScope"]) == ("report.md", SCOPE)
    return str(artifact["artifactRef"])


def _a_plan(base: str, token: str, name: str, *, then: tuple[str, ...] = ()) -> str:
    """A plan proposed in a session of its own, then taken through `then`; its Task_ID."""
    proposed = _call(base, token, "POST", "/api/plans/propose", {
        "sessionKey": f"agent:ops:user:u:direct:schema-{name}", "turnId": "turn-1",
        "taskName": "巡检", "persona": "运维", "objective": "发现异常", "result": "日报",
        "steps": ["每天巡检"], "schedule": {"kind": "cron", "expr": "0 9 * * *"},
    })
    task = str(proposed["plan"]["taskId"])
    steps: dict[str, dict[str, Any]] = {
        # The user's answer comes in a later turn than the one that wrote the revision.
        "confirm": {"revision": 1, "message": "确认", "turnId": "turn-2"},
        "pause": {},
        "run": {"mode": "force"},
    }
    for step in then:
        _call(base, token, "POST", f"/api/plans/{task}/{step}", steps[step])
    return task


def _plans(base: str, token: str) -> dict[str, str]:
    """Each plan operation's own plan, in the state that operation acts on."""
    awaiting = ("confirm", "request-changes", "revise", "cancel")
    confirmed = ("pause", "run")
    plans = {op: _a_plan(base, token, op) for op in awaiting}
    plans |= {op: _a_plan(base, token, op, then=("confirm",)) for op in confirmed}
    plans["resume"] = _a_plan(base, token, "resume", then=("confirm", "pause"))
    # The reads see a plan with a job and a run of it.
    plans["read"] = _a_plan(base, token, "read", then=("confirm", "run"))
    return plans


def _a_message(base: str, token: str, plan: str) -> tuple[int, str]:
    """The record message the plan's run put into the outbox: its id and session."""
    (run,) = _call(base, token, "GET", f"/api/plans/{plan}/runs")["entries"]
    session = f"{run['sessionKey']}:run:{run['runId']}"  # an isolated run's own session
    query = urllib.parse.urlencode({"sessionKey": session})
    (message,) = _call(base, token, "GET", f"/api/delivery/pending?{query}")["messages"]
    return int(message["id"]), session


def _long_tasks(base: str, token: str, operations: list[str]) -> dict[str, str]:
    """A registered, executing long task per operation that names one (its own session each)."""
    tasks = {}
    for operation in operations:
        name = "schema-" + operation.rsplit("/", 1)[-1]
        _call(base, token, "POST", "/api/longrun/task-state/set", {
            "task": name, "session": "schema check", "state": "executing",
            "origin_session_key": f"agent:main:{name}", "goal": "check the schema",
            "done_when": "no failure", "blocked_when": "never", "boundary": "the API",
            "next_check": "10m", "note": "next: the next operation",
        })
        tasks[operation] = name
    return tasks


def _task_operations(schema: dict[str, Any]) -> list[str]:
    """The long-run operations whose request names a task (in its body or its query)."""
    components = schema["components"]["schemas"]
    found = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            names = {p["name"] for p in operation.get("parameters", [])}
            for media in operation.get("requestBody", {}).get("content", {}).values():
                body = media["schema"]
                body = components.get(body.get("$ref", "").rsplit("/", 1)[-1], body)
                names |= set(body.get("properties", {}))
            if path.startswith("/api/longrun/") and "task" in names:
                found.append(f"{method.upper()} {path}")
    return found


def _state(server: Server, token: str, schema: dict[str, Any]) -> dict[str, Any]:
    plans = _plans(server.base, token)
    message, message_session = _a_message(server.base, token, plans["read"])
    return {
        "workspace": str(server.workspace), "session": SESSION, "run": RUN,
        "scope": SCOPE, "ref": _a_run_with_a_file(server, token), "file": "report.md",
        "fallbackDir": "reports", "plans": plans, "revision": 1,
        "tasks": _long_tasks(server.base, token, _task_operations(schema)),
        "message": message, "messageSession": message_session,
    }


# --- schemathesis --------------------------------------------------------------------------------

# schemathesis's defaults take a 5xx for a refusal or an acceptance; the service never
# answers one to a request, whatever it holds (D-K15), so neither check does here.
CONFIG = f"""\
seed = {SEED}

[generation]
max-examples = {MAX_EXAMPLES}
database = "none"

[checks.negative_data_rejection]
expected-statuses = [400, 401, 403, 404, 405, 406, 409, 414, 415, 422, 428, 429]

[checks.positive_data_acceptance]
expected-statuses = ["2xx", "3xx", 401, 403, 404, 409, 429]
"""


def _schemathesis(server: Server, tmp_path: Path, token: str, state: dict[str, Any],
                  *selection: str) -> None:
    """Run schemathesis with all checks as `token` on the `selection` of operations; it passes."""
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG, encoding="utf-8")
    env = {**os.environ, "SCHEMATHESIS_HOOKS": str(HOOKS),
           "XWORKMATE_SCHEMA_STATE": json.dumps(state),
           "XWORKMATE_SCHEMA_LOG": str(tmp_path / "answers.jsonl")}
    result = subprocess.run(
        [str(SCHEMATHESIS), "--config-file", str(config), "--no-color", "run",
         f"{server.base}/api/schema/?format=json", "--checks", "all",
         "-H", f"Authorization: Bearer {token}", "--request-timeout", "30", *selection],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1800, check=False,
    )
    report = result.stdout + result.stderr
    assert result.returncode == 0, f"{report}\n--- gunicorn log ---\n{server.log.read_text()[-5000:]}"
    selected = re.search(r"Selected: (\d+)/(\d+)", report)
    tested = re.search(r"Tested: (\d+)", report)
    assert selected and tested and int(tested[1]) == int(selected[1]) > 0, report


def _paths(flag: str, paths: tuple[str, ...]) -> list[str]:
    return [arg for path in paths for arg in (flag, path)]


def _answered_2xx(tmp_path: Path) -> set[str]:
    """The operations that answered a request of their own method with a 2xx."""
    answers = (json.loads(line) for line in (tmp_path / "answers.jsonl").open(encoding="utf-8"))
    return {a["operation"] for a in answers if a["sent"] == a["operation"].split()[0]
            and 200 <= a["status"] < 300}


def test_it_finds_no_request_or_answer_the_schema_misdescribes(server, tmp_path):
    # A key holding every scope of every area.
    _, bridge = api_key_create(name="schemathesis", scopes=list(SCOPES))
    schema = _call(server.base, bridge, "GET", "/api/schema/?format=json")
    operations = {f"{m.upper()} {p}" for p, ops in schema["paths"].items() for m in ops}
    state = _state(server, bridge, schema)

    _schemathesis(server, tmp_path, bridge, state, *_paths("--exclude-path", LAST + AGENT_ONLY))
    _schemathesis(server, tmp_path, bridge, state, *_paths("--include-path", LAST))
    _, agent = api_key_create(
        name="schemathesis-agent", scopes=["gateway:read"],
        binding=KeyBinding(session_key=SESSION, run_id=RUN),
    )
    _schemathesis(server, tmp_path, agent, state, *_paths("--include-path", AGENT_ONLY))

    # Every operation of every app met real data and accepted a request at least once.
    assert len(operations) >= 65, sorted(operations)
    assert sorted(operations - _answered_2xx(tmp_path)) == []

