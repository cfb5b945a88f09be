"""D-K31 for real: two workspace roots on two "hosts", each served by its own worker.

Two Celery workers on this machine stand in for two OpenClaw hosts: `XWORKMATE_HOST=a`
owns root ws-a, `XWORKMATE_HOST=b` owns root ws-b ([workspace.hosts]). This process
is the web side (on no host of its own): every file operation on a root runs in the
worker of that root's host, which its log shows, and the answer comes back through
Redis. With host b's worker stopped, a call on ws-b answers 503 naming the host and
its queue within the configured wait, and writes nothing (no rows, no directory);
ws-a keeps working; with b's worker back, ws-b works again.
"""

from __future__ import annotations

import json
import time
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import pytest
import redis
from django.conf import settings as django_settings

from gateway.models import SessionMapping, TaskRun
from plans.files import plan_archive_ids, plan_file_read, plan_file_write
from plans.planfile import PlanFileError
from tests.conftest import ApiClient, configure
from tests.integration.conftest import CeleryProcesses, clear_broker, wait_for
from tests.plans.test_planfile import ARCHIVE, EXPECTED_34
from xworkmate.lib.errors import HostUnavailableError

pytestmark = pytest.mark.integration

WAIT = 6  # seconds: [workspace] host_wait, for the processes and this one


def _config(ws_a: Path, ws_b: Path) -> str:
    return f"""
[workspace]
roots = ["{ws_a}", "{ws_b}"]
host_wait = "{WAIT}s"

[workspace.hosts]
"{ws_a}" = "a"
"{ws_b}" = "b"

[plans]
workspace = "{ws_b}"
"""


def _prepare(client: ApiClient, workspace: Path, run: str) -> Any:
    return client.post(
        "/gateway/xworkmate.session.prepare",
        {"schemaVersion": 1, "appThreadKey": f"t-{run}", "openclawSessionKey": f"agent:main:{run}",
         "runId": run, "requestId": run, "workspaceDir": str(workspace)},
    )


def _answers(store: redis.Redis) -> set[bytes]:
    """The answers Celery's Redis result store holds."""
    return set(cast(list[bytes], store.keys("celery-task-meta-*")))


def _wait_ready(log: Path) -> None:
    wait_for(lambda: "ready" in log.read_text(errors="replace"), timeout=60,
             what=f"the worker of {log.name} to be ready")


def _ran_on(log: Path, operation: str) -> int:
    return log.read_text(errors="replace").count(f"file operation {operation} on host")


def test_each_roots_file_work_runs_on_its_hosts_worker_and_an_away_host_is_a_clear_503(
    real_services: None, tmp_path: Path, settings: Any, owner: ApiClient
) -> None:
    clear_broker()
    ws_a, ws_b = tmp_path / "ws-a", tmp_path / "ws-b"
    ws_a.mkdir()
    ws_b.mkdir()
    configure(settings, "workspace", roots=(str(ws_a), str(ws_b)),
              hosts={str(ws_a): "a", str(ws_b): "b"}, host_wait=timedelta(seconds=WAIT))
    configure(settings, "plans", workspace=str(ws_b))
    config = _config(ws_a, ws_b)
    processes = CeleryProcesses(tmp_path)
    logs = {host: tmp_path / f"files-{host}.log" for host in "ab"}
    store = redis.Redis.from_url(django_settings.CELERY_BROKER_URL)
    stored_before = _answers(store)  # an earlier run's, expiring
    try:
        for host in "ab":
            processes.start("worker", config, name=f"files-{host}", env={"XWORKMATE_HOST": host})
        for log in logs.values():
            _wait_ready(log)

        # session.prepare on each root: the scope directory made by that root's host.
        scopes = {}
        for host, workspace in (("a", ws_a), ("b", ws_b)):
            answer = _prepare(owner, workspace, f"run-{host}")
            assert answer.status_code == 200, answer.content
            payload = answer.json()["payload"]
            scopes[host] = Path(payload["remoteWorkingDirectory"]) / payload["artifactScope"]
            assert scopes[host].is_dir() and scopes[host].is_relative_to(workspace)
        assert [_ran_on(logs[h], "gateway.session.prepare") for h in "ab"] == [1, 1]

        # An artifact written on host b's disk, exported and downloaded through b.
        (scopes["b"] / "report.md").write_text("# done on b\n", encoding="utf-8")
        exported = owner.post("/gateway/xworkmate.artifacts.export", {
            "openclawSessionKey": "agent:main:run-b", "runId": "run-b", "workspaceDir": str(ws_b)})
        assert exported.status_code == 200, exported.content
        artifacts = exported.json()["payload"]["artifacts"]
        assert [a["relativePath"] for a in artifacts] == ["report.md"]
        assert _ran_on(logs["b"], "artifacts.export") == 1 and _ran_on(logs["a"], "artifacts.export") == 0
        download = owner.post("/api/artifacts/download", {
            "artifactRef": artifacts[0]["artifactRef"], "openclawSessionKey": "agent:main:run-b",
            "runId": "run-b", "workspaceDir": str(ws_b)})
        assert download.status_code == 200
        assert b"".join(download.streaming_content) == b"# done on b\n"
        assert _ran_on(logs["b"], "artifacts.download") == 1

        # PLAN.md lives in the plans workspace, ws-b: written and read back by host b.
        plan_file_write(ARCHIVE, EXPECTED_34)
        assert plan_file_read(ARCHIVE) == EXPECTED_34
        assert plan_archive_ids() == [ARCHIVE]
        assert (ws_b / "archives" / ARCHIVE / "PLAN.md").read_text() == EXPECTED_34
        # A refusal on host b comes back as the same refusal, and nothing was written.
        with pytest.raises(PlanFileError, match="Status: must be one of Active, Cancelled"):
            plan_file_write(ARCHIVE, EXPECTED_34.replace("Active", "Paused"))
        assert plan_file_read(ARCHIVE) == EXPECTED_34
        assert [_ran_on(logs[h], "plans.write") for h in "ab"] == [0, 2]

        # Each answer was dropped from the result store once read (an artifact's bytes
        # must not stay in Redis for an hour).
        assert _answers(store) - stored_before == set()

        # Host b's worker stops: b's root answers 503 within the wait; a's keeps working.
        processes.procs[1].terminate()
        processes.procs[1].wait(timeout=30)
        started = time.monotonic()
        away = _prepare(owner, ws_b, "run-b-away")
        waited = time.monotonic() - started
        assert away.status_code == 503, away.content
        assert away["Retry-After"]
        error = away.json()["error"]
        assert error["code"] == "UNAVAILABLE"
        assert "'b'" in error["message"] and "files@b" in error["message"], error
        assert waited < WAIT + 10
        assert not SessionMapping.objects.filter(session__session_key="agent:main:run-b-away").exists()
        assert not TaskRun.objects.filter(run_id="run-b-away").exists()
        assert not (ws_b / "tasks" / "agent_main_run-b-away").exists()
        with pytest.raises(HostUnavailableError, match="files@b"):
            plan_file_read(ARCHIVE)
        assert _prepare(owner, ws_a, "run-a-2").status_code == 200

        # b is back: the operation that expired unrun never runs; new ones do.
        processes.start("worker", config, name="files-b2", env={"XWORKMATE_HOST": "b"})
        _wait_ready(tmp_path / "files-b2.log")
        assert _prepare(owner, ws_b, "run-b-back").status_code == 200
        time.sleep(1)
        assert not (ws_b / "tasks" / "agent_main_run-b-away").exists()
        assert json.dumps(error)  # the away answer was the JSON error shape
    finally:
        processes.stop()
