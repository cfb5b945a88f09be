"""Agent keys bound to a run (§13.0): created by the CLI or the admin, refused when half bound."""

from __future__ import annotations

import html
import re

import pytest
from django.contrib.auth.models import User

from tests.conftest import ApiClient, manage
from tests.gateway.conftest import prepare
from xworkmate.models import ApiKey
from xworkmate.services import api_key_create


def test_the_cli_creates_a_key_bound_to_a_session_and_run(transactional_db, workspace):
    result = manage("xworkmate", "apikey", "create", "--name", "agent-1", "--scope", "gateway:write", "--session", "k1", "--run", "r1")
    assert result.returncode == 0, result.stderr
    assert "bound to session 'k1' run 'r1'" in result.stdout
    key = ApiKey.objects.get(name="agent-1")
    assert (key.bound_session_key, key.bound_run_id, key.is_bound) == ("k1", "r1", True)
    prepare(ApiClient(api_key_create(name="bridge", scopes=["gateway:write"])[1]), appThreadKey="t", openclawSessionKey="k1", runId="r0")
    payload = prepare(ApiClient(result.stdout.strip().splitlines()[-1]), appThreadKey="t", openclawSessionKey="x", runId="y")
    assert payload["artifactScope"] == "tasks/k1/r1"
    listed = manage("xworkmate", "apikey", "list")
    assert "agent-1" in listed.stdout and "bound k1 / r1" in listed.stdout


@pytest.mark.parametrize("args", [["--session", "k1"], ["--run", "r1"], ["--workspace", "/w"]])
def test_the_cli_refuses_a_half_bound_key(transactional_db, args):
    result = manage("xworkmate", "apikey", "create", "--name", "agent-2", "--scope", "gateway:write", *args)
    assert result.returncode != 0
    assert "session: a" in result.stderr
    assert not ApiKey.objects.filter(name="agent-2").exists()


def test_the_admin_creates_a_bound_key(client, db, workspace):
    client.force_login(User.objects.create_superuser("alice", "", "pw-alice-123"))
    response = client.post(
        "/admin/xworkmate/apikey/add/",
        {"name": "agent", "scopes": ["gateway:write"], "bound_session_key": "k1", "bound_run_id": "r1"},
        follow=True,
    )
    token = re.search(r"(xwm_[A-Za-z0-9_-]{40,})", response.content.decode()).group(1)
    assert ApiKey.objects.get(name="agent").is_bound
    prepare(ApiClient(api_key_create(name="bridge", scopes=["gateway:write"])[1]), appThreadKey="t", openclawSessionKey="k1", runId="r0")
    assert prepare(ApiClient(token), appThreadKey="t", openclawSessionKey="x", runId="y")["runId"] == "r1"
    response = client.post("/admin/xworkmate/apikey/add/", {"name": "half", "scopes": ["gateway:write"], "bound_run_id": "r1"})
    assert "session: a bound key needs both" in response.content.decode()
    assert not ApiKey.objects.filter(name="half").exists()


def test_the_admin_shows_sessions_mappings_runs_and_native_tasks_read_only(client, db, bridge, workspace):
    client.force_login(User.objects.create_superuser("alice", "", "pw-alice-123"))
    prepare(bridge, appThreadKey="t1", openclawSessionKey="k1", runId="r1")
    (workspace / "tasks/k1/r1/report.md").write_text("# r\n")
    bridge.post("/api/gateway/hooks/agent_end", {"event": {"runId": "r1", "error": "api_key=sk-x"}, "ctx": {"sessionKey": "k1"}})
    bridge.post("/api/gateway/native-tasks", {"sessionKey": "k1", "task": {"taskId": "n1", "status": "running"}})
    for path in ("sessionentry", "sessionmapping", "taskrun", "nativetask"):
        page = client.get(f"/admin/gateway/{path}/")
        assert page.status_code == 200, path
        assert "k1" in page.content.decode() or "t1" in page.content.decode()
        assert client.get(f"/admin/gateway/{path}/add/").status_code == 403
    from gateway.models import TaskRun

    run = TaskRun.objects.get()
    detail = client.get(f"/admin/gateway/taskrun/{run.pk}/change/").content.decode()
    assert "report.md" in detail and "api_key=&lt;redacted&gt;" in detail and "sk-x" not in detail
    # Each artifact links to its streamed download, which the staff session may fetch.
    link = re.search(r'href="(/api/artifacts/download\?[^"]+)"', detail).group(1)
    download = client.get(html.unescape(link))
    assert download.status_code == 200 and b"".join(download.streaming_content) == b"# r\n"
    assert client.post(f"/admin/gateway/taskrun/{run.pk}/delete/", {"post": "yes"}).status_code == 403
    assert TaskRun.objects.filter(pk=run.pk).exists()
