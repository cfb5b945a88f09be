"""The artifact methods and endpoints through REST, with real API keys and a real tree."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest
from django.test import override_settings

from artifacts.services import SECRET_NAME, artifact_settings
from tests.artifacts.engine_support import make_workspace, prepare, settings_for, tree_state, write
from xworkmate.methods import registered_methods
from xworkmate.models import ApiKey
from xworkmate.wiring import parse_config_text

ARTIFACT_METHODS = [
    "xworkmate.artifacts.export",
    "xworkmate.artifacts.collect-and-snapshot",
    "xworkmate.artifacts.list",
    "xworkmate.artifacts.read",
]


@pytest.fixture
def workspace(tmp_path, settings):
    root = make_workspace(tmp_path)
    config = parse_config_text(
        f'[workspace]\nroots = ["{root}"]\n[artifacts]\nref_signing_secret = "gw-secret"\n',
        home=tmp_path / "home",
    )
    with override_settings(XWORKMATE=config):
        yield root


@pytest.fixture
def report(workspace):
    scope = prepare(settings_for(workspace, signing_secret="gw-secret"), "thread-main", "turn-1")
    return write(scope / "reports" / "final.md", "# Done\n")


def ids(session="thread-main", run="turn-1", **extra):
    return {"openclawSessionKey": session, "runId": run, **extra}


def test_the_four_methods_are_registered_in_contract_order():
    names = [m.name for m in registered_methods()]
    assert [n for n in names if n.startswith("xworkmate.artifacts.")] == ARTIFACT_METHODS


def test_it_exports_and_reads_back_through_the_gateway(owner, report):
    export = owner.post("/gateway/xworkmate.artifacts.export", ids())
    assert export.status_code == 200, export.content
    payload = export.json()["payload"]
    assert payload["artifactScope"] == "tasks/thread-main/turn-1"
    (artifact,) = payload["artifacts"]
    assert artifact["relativePath"] == "reports/final.md"
    assert artifact["content"] == base64.b64encode(b"# Done\n").decode()
    read = owner.post("/gateway", {"method": "xworkmate.artifacts.read",
                                   "params": ids(artifactRef=artifact["artifactRef"])})
    assert read.json()["payload"]["artifacts"][0]["content"] == "IyBEb25lCg=="
    listed = owner.post("/gateway/xworkmate.artifacts.list", ids()).json()["payload"]
    assert "content" not in listed["artifacts"][0]


def test_the_golden_vector_ref_verifies_with_the_configured_secret(owner, tmp_path):
    """§12.3: secret test-secret, workspace /srv/ws, reports/final.md = "# Done\\n"."""
    from artifacts.engine import verify_artifact_ref

    golden = (
        "eyJ2IjoyLCJ3b3Jrc3BhY2VSb290SGFzaCI6IjAyOTU2MjFmM2NmOTg4YTcwZWRkMmQ0NjgxMTJiZmFjMTQz"
        "Mjg3NTI3NDAzNTFmMzFkMmM2NDM1ZTk3NWVlYTMiLCJzY29wZUtpbmQiOiJ0YXNrIiwic2Vzc2lvblNjb3Bl"
        "IjoidGFza3MvdGhyZWFkLW1haW4iLCJydW5TY29wZSI6InRhc2tzL3RocmVhZC1tYWluL3R1cm4tMSIsImFy"
        "dGlmYWN0U2NvcGUiOiJ0YXNrcy90aHJlYWQtbWFpbi90dXJuLTEiLCJyZWxhdGl2ZVBhdGgiOiJyZXBvcnRz"
        "L2ZpbmFsLm1kIiwic2l6ZUJ5dGVzIjo3LCJzaGEyNTYiOiIxYzc1NmU0ZGI1Yjc4N2I2ZTY2MGM4MGNhZjIz"
        "ZjdjMTBiNmI5NTQzZTUzYzM4ZTFlZmY0NzgzN2VhYWQxMzM4In0.XxmMfuZYJ-FDG60NjBu7NN1R6cHVCZQsDBX44_MWJXA"
    )
    config = parse_config_text('[artifacts]\nref_signing_secret = "test-secret"\n', home=tmp_path)
    with override_settings(XWORKMATE=config):
        payload = verify_artifact_ref(golden, secret=artifact_settings().signing_secret,
                                      workspace_root="/srv/ws")
    assert payload.relative_path == "reports/final.md" and payload.size_bytes == 7


def test_the_secret_comes_from_config_then_env_then_the_data_home_d_a10(tmp_path, settings):
    home = tmp_path / "home"
    with override_settings(XWORKMATE=parse_config_text("", home=home, env={}), HOME=home):
        generated = artifact_settings().signing_secret
        assert (home / "secrets" / SECRET_NAME).read_text().strip() == generated
        assert artifact_settings().signing_secret == generated  # reused, not regenerated
    env = {"XWORKMATE_ARTIFACT_REF_SIGNING_SECRET": "from-env"}
    with override_settings(XWORKMATE=parse_config_text("", home=home, env=env), HOME=home):
        assert artifact_settings().signing_secret == "from-env"
    text = '[artifacts]\nref_signing_secret = "from-file"\n'
    with override_settings(XWORKMATE=parse_config_text(text, home=home, env=env), HOME=home):
        assert artifact_settings().signing_secret == "from-file"


def test_it_refuses_bad_params_with_the_contract_message_and_writes_nothing(owner, workspace):
    before = tree_state(workspace)
    cases = [
        ("xworkmate.artifacts.export", {"runId": "r"}, "openclawSessionKey required"),
        ("xworkmate.artifacts.export", ids(maxFiles="many"), "maxFiles must be a number"),
        ("xworkmate.artifacts.read", ids(relativePath="reports/final.md"),
         "artifactScope or artifactRef required"),
        ("xworkmate.artifacts.read",
         ids(relativePath="../etc/passwd", artifactScope="tasks/thread-main/turn-1"),
         "relativePath must stay inside the workspace"),
        ("xworkmate.artifacts.read", ids(artifactRef="abc.def"), "invalid artifactRef"),
        ("xworkmate.artifacts.export", ids(workspaceDir="/etc"),
         "workspaceDir must be inside a configured workspace root"),
        ("xworkmate.artifacts.export", ids(expectedArtifactDirs=["tasks/x"]),
         "expectedArtifactDir must stay outside task scopes"),
    ]
    for method, params, message in cases:
        response = owner.post(f"/gateway/{method}", params)
        assert response.status_code == 400, (method, params)
        assert response.json() == {"ok": False, "error": {"code": "INVALID_REQUEST", "message": message}}
    assert tree_state(workspace) == before


def test_a_ref_of_another_run_is_refused(owner, report, workspace):
    ref = owner.post("/gateway/xworkmate.artifacts.export", ids()).json()["payload"]["artifacts"][0]["artifactRef"]
    response = owner.post("/gateway/xworkmate.artifacts.read", ids(run="turn-2", artifactRef=ref))
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "INVALID_REQUEST"


def test_it_downloads_by_ref_with_the_same_checks_as_read(owner, report):
    ref = owner.post("/gateway/xworkmate.artifacts.export", ids()).json()["payload"]["artifacts"][0]["artifactRef"]
    query = {"artifactRef": ref, "openclawSessionKey": "thread-main", "runId": "turn-1"}
    response = owner.client.get("/api/artifacts/download", query, headers=owner._headers())
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"# Done\n"
    assert response["Content-Type"] == "text/markdown"
    assert response["Content-Length"] == "7"
    assert 'filename="final.md"' in response["Content-Disposition"]
    # POST with a JSON body works the same (keeps session keys out of URLs).
    posted = owner.post("/api/artifacts/download", query)
    assert b"".join(posted.streaming_content) == b"# Done\n"
    # A changed file is refused; a deleted one is 404 with the ENOENT wording.
    report.write_text("# Changed\n", encoding="utf-8")
    changed = owner.post("/api/artifacts/download", query)
    assert changed.status_code == 400
    report.unlink()
    missing = owner.post("/api/artifacts/download", query)
    assert missing.status_code == 404
    assert "ENOENT: no such file or directory" in missing.json()["error"]["message"]


def test_download_refuses_outsiders_and_tampered_refs(anonymous, outsider, owner, report):
    ref = owner.post("/gateway/xworkmate.artifacts.export", ids()).json()["payload"]["artifacts"][0]["artifactRef"]
    query = {"artifactRef": ref, "openclawSessionKey": "thread-main", "runId": "turn-1"}
    assert anonymous.post("/api/artifacts/download", query).status_code == 401
    assert outsider.post("/api/artifacts/download", query).status_code == 403
    tampered = {**query, "artifactRef": ref[:-2] + ("AA" if not ref.endswith("AA") else "BB")}
    response = owner.post("/api/artifacts/download", tampered)
    assert response.status_code == 400 and response.json()["error"]["message"] == "invalid artifactRef"


def _bind(name, session="thread-main", run="turn-1"):
    ApiKey.objects.filter(name=name).update(bound_session_key=session, bound_run_id=run)


def test_a_bound_agent_key_only_sees_its_own_run_13_0(make_client, report, workspace):
    other = prepare(settings_for(workspace, signing_secret="gw-secret"), "thread-other", "turn-9")
    write(other / "secret.txt", "not yours")
    agent = make_client("gateway:read", name="agent")
    _bind("agent")
    # Asking for another session's run still answers the bound run (§13.0 override).
    payload = agent.post("/gateway/xworkmate.artifacts.export",
                         ids("thread-other", "turn-9")).json()["payload"]
    assert payload["artifactScope"] == "tasks/thread-main/turn-1"
    assert [a["relativePath"] for a in payload["artifacts"]] == ["reports/final.md"]


def test_the_agent_tool_lists_and_reads_for_its_bound_run(make_client, report):
    agent = make_client("gateway:read", name="agent")
    _bind("agent")
    listed = agent.post("/api/artifacts/tool", {"action": "list", "openclawSessionKey": "thread-other"})
    assert listed.status_code == 200
    text = listed.json()["content"][0]["text"]
    assert text.startswith("## XWorkmate artifacts\n")
    assert "Artifact scope: `tasks/thread-main/turn-1`" in text
    assert "| `reports/final.md` | text/markdown | 7 B |" in text
    # §13.7: without a bound task directory, a read by path names its scope.
    read = agent.post("/api/artifacts/tool", {"action": "read", "relativePath": "reports/final.md",
                                              "artifactScope": "tasks/thread-main/turn-1"})
    assert "```base64\nIyBEb25lCg==\n```" in read.json()["content"][0]["text"]
    bad = agent.post("/api/artifacts/tool", {"action": "delete"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "INVALID_REQUEST"
    definition = agent.get("/api/artifacts/tool").json()
    assert definition["name"] == "openclaw_multi_session_artifacts"


def test_the_agent_tool_needs_a_bound_key(owner, anonymous, report):
    response = owner.post("/api/artifacts/tool", {"action": "list"})
    assert response.status_code == 403
    assert response.json()["error"]["message"] == (
        "the artifact tool needs an API key bound to a session and run"
    )
    assert anonymous.post("/api/artifacts/tool", {"action": "list"}).status_code == 401


def test_a_read_only_key_cannot_snapshot(reader, workspace):
    response = reader.post("/gateway/xworkmate.artifacts.collect-and-snapshot", ids())
    assert response.status_code == 403
    assert not (Path(workspace) / "tasks").exists()


def test_a_staff_user_downloads_from_the_admin(client, db, report, owner):
    from django.contrib.auth.models import User

    ref = owner.post("/gateway/xworkmate.artifacts.export", ids()).json()["payload"]["artifacts"][0]["artifactRef"]
    query = {"artifactRef": ref, "openclawSessionKey": "thread-main", "runId": "turn-1"}
    assert client.get("/api/artifacts/download", query).status_code in (401, 403)
    client.force_login(User.objects.create_superuser("ops", "", "pw-ops-12345"))
    response = client.get("/api/artifacts/download", query)
    assert response.status_code == 200 and b"".join(response.streaming_content) == b"# Done\n"
    os.sync()


def test_the_readme_artifact_example(owner, workspace):
    """README "Example: export, read by ref, a foreign read, download", value by value."""
    session = "agent:main:thread-42"
    prepared = owner.post("/gateway/xworkmate.session.prepare", {
        "schemaVersion": 1, "appThreadKey": "thread-42", "openclawSessionKey": session,
        "runId": "run-1"})
    scope = Path(prepared.json()["payload"]["artifactDirectory"])
    write(scope / "report.md", "# Weekly report\n")
    write(scope / "charts" / "sales.png", b"\x89PNG\r\n\x1a\n" + b"\0" * 2000)
    payload = owner.post("/gateway/xworkmate.artifacts.export", {
        "openclawSessionKey": session, "runId": "run-1", "maxInlineBytes": 1024,
        "requiredArtifactExtensions": ["md", "pdf"]}).json()["payload"]
    report, chart = payload["artifacts"]
    assert payload["artifactScope"] == "tasks/agent_main_thread-42/run-1"
    assert (report["sha256"], report["content"]) == (
        "a4415c2c76f76230ec2684b92b33f3c6e54b4ac31c07afd7c2af8f5727958975", "IyBXZWVrbHkgcmVwb3J0Cg==")
    assert chart["sha256"] == "3e42873f5cc6be56533a4b6acde579f557fe5e3bea979e8f36de0a4e7bb1539a"
    assert "content" not in chart
    assert payload["warnings"] == ["charts/sales.png exceeds maxInlineBytes and was not inlined"]
    assert (payload["constraintSatisfied"], payload["missingRequiredExtensions"]) == (False, ["pdf"])
    ref = chart["artifactRef"]
    read = owner.post("/gateway/xworkmate.artifacts.read",
                      {"openclawSessionKey": session, "runId": "run-1", "artifactRef": ref})
    assert read.json()["payload"]["artifacts"][0]["content"].startswith("iVBORw0KGgo")
    foreign = owner.post("/gateway/xworkmate.artifacts.read",
                         {"openclawSessionKey": "agent:main:thread-43", "runId": "run-1",
                          "artifactRef": ref})
    assert foreign.status_code == 400
    assert foreign.json()["error"]["message"] == "artifactRef does not match sessionKey/runId"
    download = owner.post("/api/artifacts/download",
                          {"openclawSessionKey": session, "runId": "run-1", "artifactRef": ref})
    assert (download.status_code, download["Content-Type"], download["Content-Length"]) == (
        200, "image/png", "2008")
    assert download["Content-Disposition"] == 'attachment; filename="sales.png"'
