"""The OpenAPI schema tells the truth (issue 9 §11): schemathesis finds nothing against it.

Bridge developers generate clients from `/api/schema/`. schemathesis reads that
schema from gunicorn (on PostgreSQL, as in production), generates requests
the schema calls valid and requests it calls invalid for every operation, and
runs all of its checks on the answers: valid requests are accepted, invalid
ones refused, and every status, content type, header and body is one the
schema documents. A fixed seed and a small example count keep the run
deterministic and short. The bridge's key runs every operation; an agent key
(bound to the prepared run) then runs the agent tool, which only it may call.

What a schema cannot say is the service's state: a workspace must lie inside
a configured root, a ref must be one the service signed for that run, a cron
expression must parse. For those fields the run supplies real values (a
prepared run, its workspace and a ref list issued for it) through
schemathesis hooks (schemathesis_state.py); every other field is generated.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import running_gunicorn
from xworkmate.policies import AREAS
from xworkmate.services import KeyBinding, api_key_create

SEED = 9011
MAX_EXAMPLES = 25
SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
SESSION, RUN = "agent:main:schema-check", "run-1"
SCOPE = "tasks/agent_main_schema-check/run-1"
HOOKS = Path(__file__).with_name("schemathesis_state.py")


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


def _post(base: str, token: str, path: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        base + path, data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def _a_run_with_a_file(server: Server, token: str) -> str:
    """Prepare the run, give it a file and a fallback dir, and answer the file's ref."""
    ids = {"openclawSessionKey": SESSION, "runId": RUN}
    prepared = _post(server.base, token, "/gateway/xworkmate.session.prepare",
                     {**ids, "appThreadKey": "schema-check", "expectedArtifactDirs": ["reports"]})
    Path(prepared["payload"]["artifactDirectory"], "report.md").write_text("# Report\n")
    (server.workspace / "reports").mkdir()
    (server.workspace / "reports" / "summary.txt").write_text("fallback\n")
    listed = _post(server.base, token, "/gateway/xworkmate.artifacts.list", ids)
    (artifact,) = listed["payload"]["artifacts"]
    assert (artifact["relativePath"], artifact["artifactScope"]) == ("report.md", SCOPE)
    return str(artifact["artifactRef"])


def _a_plan(server: Server, token: str) -> str:
    """A proposed plan, so that the plan operations reach it (its Task_ID)."""
    proposed = _post(server.base, token, "/api/plans/propose", {
        "sessionKey": "agent:ops:user:u:direct:schema-check", "turnId": "run-1",
        "taskName": "巡检", "persona": "运维", "objective": "发现异常", "result": "日报",
        "steps": ["每天巡检"], "schedule": {"kind": "cron", "expr": "0 9 * * *"},
    })
    return str(proposed["plan"]["taskId"])


CONFIG = f"""\
seed = {SEED}

[generation]
max-examples = {MAX_EXAMPLES}
# The service refuses NUL in every string of every body (the schema says so once, in
# its description); free-form values (unknown params, a task record) must not hold one.
allow-x00 = false
database = "none"

# gunicorn itself answers 414 (plain text, before the service sees the request) to
# a request line over 4094 bytes: a refusal too, documented on each GET operation.
[checks.negative_data_rejection]
expected-statuses = [400, 401, 403, 404, 405, 406, 409, 414, 415, 422, 428, 429, "5xx"]
"""


def _schemathesis(server: Server, tmp_path: Path, token: str, state: dict[str, str],
                  *only: str) -> str:
    """Run schemathesis with all checks as `token`; its report, after asserting it passed."""
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG, encoding="utf-8")
    env = {**os.environ, "SCHEMATHESIS_HOOKS": str(HOOKS),
           "XWORKMATE_SCHEMA_STATE": json.dumps(state)}
    selection = [arg for path in only for arg in ("--include-path", path)]
    result = subprocess.run(
        [str(SCHEMATHESIS), "--config-file", str(config), "--no-color", "run",
         f"{server.base}/api/schema/?format=json", "--checks", "all",
         "-H", f"Authorization: Bearer {token}", "--request-timeout", "30", *selection],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900, check=False,
    )
    report = result.stdout + result.stderr
    assert result.returncode == 0, f"{report}\n--- gunicorn log ---\n{server.log.read_text()[-5000:]}"
    selected = re.search(r"Selected: (\d+)/(\d+)", report)
    tested = re.search(r"Tested: (\d+)", report)
    assert selected and tested and int(tested[1]) == int(selected[1]) > 0, report
    return report


def _refused(report: str) -> set[str]:
    """The operations schemathesis saw answer only 401/403 for the key."""
    found = re.search(r"^Authentication failed:(?P<list>.*?)^💡", report, re.M | re.S)
    return set(re.findall(r"^  - (\S+ \S+)$", found["list"], re.M)) if found else set()


def test_schemathesis_finds_no_request_or_answer_the_schema_misdescribes(server, tmp_path):
    # Every area's write scope, so that no operation is refused for want of one.
    _, bridge = api_key_create(name="schemathesis", scopes=[f"{a}:write" for a in AREAS])
    state = {
        "workspace": str(server.workspace), "session": SESSION, "run": RUN,
        "scope": SCOPE, "ref": _a_run_with_a_file(server, bridge), "file": "report.md",
        "fallbackDir": "reports", "taskId": _a_plan(server, bridge),
    }
    report = _schemathesis(server, tmp_path, bridge, state)
    selected = re.search(r"Selected: (\d+)/(\d+)", report)
    assert selected and int(selected[1]) == int(selected[2]) >= 17, report  # every operation
    # The bridge's key reached every operation but the agent tool, which needs an agent key.
    assert _refused(report) <= {"POST /api/artifacts/tool"}, report

    _, agent = api_key_create(
        name="schemathesis-agent", scopes=["gateway:read"],
        binding=KeyBinding(session_key=SESSION, run_id=RUN),
    )
    report = _schemathesis(server, tmp_path, agent, state, "/api/artifacts/tool")
    assert not _refused(report), report
