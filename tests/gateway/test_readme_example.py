"""The README's end-to-end example (issue 4 req 8), call for call.

The calls are read from the README itself (the block between the example
markers), so the documentation cannot drift from what the service does.
"""

from __future__ import annotations

import base64
import json
import re

from tests.conftest import ROOT

_CURL = re.compile(r"curl -s -X POST http://127\.0\.0\.1:8000(?P<path>\S+) \\\n.*?\n\s+-d '(?P<body>[^']*)'", re.S)
_WRITE = re.compile(r"printf '(?P<text>[^']*)' > \"\$HOME/\.openclaw/workspace/(?P<path>[^\"]+)\"")


def example_block() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return text.split("<!-- example:start", 1)[1].split("<!-- example:end -->", 1)[0]


def test_the_readme_example_runs_as_documented(bridge, workspace):
    block = example_block()
    calls = [(m["path"], m["body"]) for m in _CURL.finditer(block)]
    assert [path for path, _ in calls] == [
        "/gateway/xworkmate.session.prepare",
        "/api/gateway/hooks/agent_end",
        "/gateway/xworkmate.tasks.get",
        "/gateway/xworkmate.artifacts.read",
    ]
    (prepare_path, prepare_body), (end_path, end_body), (get_path, get_body), (read_path, read_body) = calls

    prepared = bridge.post(prepare_path, json.loads(prepare_body)).json()
    assert prepared["ok"] is True
    payload = prepared["payload"]
    assert payload["artifactScope"] == "tasks/agent_main_thread-42/run-1"
    assert payload["mapping"]["source"] == "bridge_prepare"

    # Step 2: the agent writes into artifactDirectory (the README's path, in this workspace).
    write = _WRITE.search(block)
    target = workspace / write["path"]
    assert str(target.parent) == payload["artifactDirectory"]
    target.write_text(write["text"].replace("\\n", "\n"), encoding="utf-8")

    assert bridge.post(end_path, json.loads(end_body)).json() == {"ok": True, "recorded": True}

    got = bridge.post(get_path, json.loads(get_body)).json()
    assert got["ok"] is True
    result = got["payload"]
    assert (result["status"], result["success"], result["terminalSource"]) == ("completed", True, "agent_end")
    assert result["output"] == "The weekly report is in report.md."
    [artifact] = result["artifacts"]
    assert (artifact["relativePath"], artifact["contentType"], artifact["sizeBytes"]) == ("report.md", "text/markdown", 16)
    assert result["artifactCount"] == 1 and result["warnings"] == []
    documented = json.loads(block.split("```json", 3)[3].split("```", 1)[0])["payload"]
    assert list(documented) == list(result)  # the documented answer has the real key order

    read = bridge.post(read_path, json.loads(read_body.replace("$REF", artifact["artifactRef"]))).json()
    assert read["ok"] is True, read
    assert base64.b64decode(read["payload"]["artifacts"][0]["content"]) == b"# Weekly report\n"
