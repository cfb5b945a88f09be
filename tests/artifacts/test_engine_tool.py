"""The agent tool's Markdown manifests (§13.7, §18 G-116/118/119)."""

from __future__ import annotations

from pathlib import Path

import pytest

from artifacts.engine import (
    TOOL_DEFINITION,
    ToolContext,
    format_manifest_markdown,
    tool_execute,
)
from artifacts.engine.tool import _format_size
from tests.artifacts.engine_support import make_workspace, prepare, settings_for, write
from xworkmate.lib.errors import InputError


def test_case_116_schema_and_required_context(tmp_path: Path) -> None:
    config = settings_for(make_workspace(tmp_path))
    properties = TOOL_DEFINITION["parameters"]["properties"]  # type: ignore[index]
    assert not {"sessionKey", "runId", "workspaceDir"} & set(properties)
    with pytest.raises(InputError, match=r"^sessionKey required$"):
        tool_execute({"action": "list"}, ToolContext(), config)
    with pytest.raises(InputError, match=r"^runId required$"):
        tool_execute({"action": "delete"}, ToolContext(session_key="thread-main"), config)


def test_case_118_list_manifest_text(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    config = settings_for(workspace)
    write(prepare(config, "k1", "r1") / "a.md", "# A")
    context = ToolContext(session_key="k1", run_id="r1", workspace_dir=str(workspace))
    assert tool_execute({"action": "list"}, context, config) == "\n".join(
        [
            "## XWorkmate artifacts",
            "",
            f"Workspace: `{workspace}`",
            "Artifact scope: `tasks/k1/r1`",
            "",
            "| File | Type | Size | SHA-256 | Inline |",
            "| --- | --- | ---: | --- | --- |",
            "| `a.md` | text/markdown | 3 B | `327f031b25e0` | no |",
        ]
    )


def test_case_119_read_manifest_text(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    config = settings_for(workspace)
    scope = prepare(config, "k1", "r1")
    write(scope / "a.md", "# A")
    write(scope / "e.txt", b"")
    context = ToolContext(session_key="k1", run_id="r1", workspace_dir=str(workspace))
    text = tool_execute(
        {"action": "read", "relativePath": "a.md", "artifactScope": "tasks/k1/r1"}, context, config
    )
    lines = text.split("\n")
    assert "| `a.md` | text/markdown | 3 B | `327f031b25e0` | yes |" in lines
    assert lines[-6:] == ["", "Base64 content for `a.md`:", "", "```base64", "IyBB", "```"]
    empty = tool_execute(
        {"action": "read", "relativePath": "e.txt", "artifactScope": "tasks/k1/r1"}, context, config
    )
    assert empty.split("\n")[-1] == (
        "`e.txt` is larger than maxInlineBytes; use the workspace path to download it directly."
    )
    with pytest.raises(InputError, match=r"^artifactScope or artifactRef required$"):
        tool_execute({"action": "read", "relativePath": "a.md"}, context, config)
    with pytest.raises(InputError, match=r"^action must be list or read$"):
        tool_execute({"action": "delete"}, context, config)


def test_tool_params_cannot_choose_session_run_or_workspace(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    config = settings_for(workspace)
    write(prepare(config, "evil", "r1") / "secret.md", "s")
    context = ToolContext(session_key="k1", run_id="r1")
    text = tool_execute(
        {"action": "list", "openclawSessionKey": "evil", "sessionKey": "evil", "workspaceDir": "/"},
        context,
        config,
    )
    assert "secret.md" not in text
    assert "No artifacts found for this task run." in text
    assert "Warnings:\n- artifact scope is not prepared for this task run" in text


def test_host_task_directory_supplies_the_scope(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    config = settings_for(workspace)
    write(prepare(config, "k1", "r1") / "a.md", "# A")
    context = ToolContext(session_key="k1", run_id="r1", relative_task_directory="tasks/k1/r1")
    assert "IyBB" in tool_execute({"action": "read", "relativePath": "a.md"}, context, config)


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1536, "2 KB"),
        (1024 * 1024 - 1, "1024 KB"),
        (1310720, "1.3 MB"),
        (1024 * 1024 * 10, "10 MB"),
        (1024 * 1024 * 1024, "1024 MB"),
    ],
)
def test_manifest_size_formatting(size: int, text: str) -> None:
    assert _format_size(size) == text


def test_manifest_escapes_pipes_and_lists_warnings() -> None:
    text = format_manifest_markdown(
        {
            "remoteWorkingDirectory": "/w",
            "artifactScope": "",
            "scopeKind": "task",
            "artifacts": [
                {"relativePath": "a|b.md", "contentType": "x|y", "sizeBytes": 1, "sha256": "ab"}
            ],
            "warnings": ["w1"],
        }
    )
    assert "Artifact scope: `task`" in text
    assert "| `a\\|b.md` | x\\|y | 1 B | `ab` | no |" in text
    assert text.endswith("\n\nWarnings:\n- w1")
