"""The operation table (longrun/skill/scripts/_operations.py) drives every door of an operation.

Each operation with an endpoint has its URL, its view (method and scope as
the table says) and its wrapper script; every script has the command line's
parser and handler; the wrappers build their parsers from the table (their
usage and flags are the command line's); and the endpoints take the table's
flags as their fields.
"""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from django.urls import resolve, reverse
from drf_spectacular.generators import SchemaGenerator

from longrun.cli import SCRIPTS, run
from longrun.cli._args import COUNTS
from longrun.cli.running import HANDLERS
from longrun.operations import SKILL_SCRIPTS, render, table
from longrun.policies.messages import UNSET
from tests.conftest import run_skill_script

ENDPOINTS = [operation for operation in table.operations() if operation.route is not None]
WRAPPED = [script for script in table.SCRIPTS.values() if script.wrapper is not None]
# The paging parameters every survey takes beside its own (D-K13).
PAGING = {"limit", "offset"}


def test_the_command_line_runs_the_tables_scripts():
    assert SCRIPTS is table.SCRIPTS
    names = [operation.name for operation in table.operations()]
    assert len(names) == len(set(names))
    assert set(HANDLERS) == set(names)
    for script in table.SCRIPTS.values():
        parser = table.parser(script, COUNTS, prog=script.name + script.suffix)
        assert parser.prog == script.name + script.suffix


@pytest.mark.parametrize("operation", ENDPOINTS, ids=lambda operation: operation.name)
def test_every_endpoint_has_its_url_and_its_view(operation):
    assert operation.method in (table.GET, table.POST)
    assert operation.scope in (table.READ, table.WRITE)
    url = reverse(operation.view_name)
    assert url == "/" + operation.route
    view = resolve(url).func.view_class
    assert view.operation == operation
    assert view.required_scope == operation.scope
    assert [method for method in ("get", "post") if hasattr(view, method)] == [
        operation.method.lower()
    ]
    assert (operation.render is not None) <= any(flag.name == "--json" for flag in operation.flags)


def test_the_operations_without_an_endpoint_are_the_command_lines_own():
    own = {operation.name for operation in table.operations() if operation.route is None}
    assert own == {"install-watchdog-cron", "watchdog-loop", "import-state", "export-state"}
    for operation in table.operations():
        if operation.route is None:
            assert operation.method is None and operation.scope is None


def test_every_wrapper_is_a_tables_script_and_builds_its_parser_from_it():
    wrappers = {path.name for path in SKILL_SCRIPTS.glob("[a-z]*.py")}
    assert wrappers == {script.wrapper for script in WRAPPED}
    for script in WRAPPED:
        text = (SKILL_SCRIPTS / str(script.wrapper)).read_text(encoding="utf-8")
        assert re.search(rf'^    run_script\("{re.escape(script.name)}"[,)]', text, re.M), script
        # No flag, path or scope of its own.
        assert "argparse" not in text and "add_argument" not in text and "/" not in text.split(
            '"""', 2
        )[2], script


def _help(text: str) -> tuple[str, str]:
    """(usage, the flags) of a --help text: its description is each side's own."""
    usage, _, rest = text.partition("\n\n")
    return usage, rest.partition("\n\n")[2]


def _cli_help(*argv: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    assert run([*argv, "--help"], prog="longrun", stdout=out, stderr=err) == 0, err.getvalue()
    return out.getvalue()


@pytest.mark.parametrize("script", WRAPPED, ids=lambda script: script.name)
def test_a_wrappers_usage_and_flags_are_the_command_lines(script, monkeypatch):
    # argparse's width, as the wrapper's process (no terminal, no COLUMNS) has it.
    monkeypatch.setenv("COLUMNS", "80")
    commands = [[]] + [[str(op.command)] for op in script.operations if op.command is not None]
    for command in commands:
        wrapper = run_skill_script(
            SKILL_SCRIPTS / str(script.wrapper), "", "", *command, "--help", isolated=False
        )
        assert wrapper.code == 0, wrapper
        # The program's name aside: the command line's is the script's, suffix and all.
        usage, flags = _help(wrapper.stdout.replace(str(script.wrapper), script.name + script.suffix))
        assert (usage, flags) == _help(_cli_help(script.name, *command)), (script, command)


def _fields(operation_schema: dict[str, Any], components: dict[str, Any]) -> set[str]:
    if "requestBody" in operation_schema:
        ref = operation_schema["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        return set(components[ref.rsplit("/", 1)[1]].get("properties", {}))
    return {
        parameter["name"]
        for parameter in operation_schema.get("parameters", [])
        if parameter["in"] == "query"
    } - PAGING


def test_every_endpoint_takes_the_tables_flags_and_documents_its_scope():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    components = schema["components"]["schemas"]
    for operation in ENDPOINTS:
        described = schema["paths"]["/" + operation.route][str(operation.method).lower()]
        assert described["operationId"] == "longrun_" + operation.name.replace("-", "_")
        assert described["description"].startswith(f"Scope: `{operation.scope}`"), operation
        sent = {flag.wire for flag in operation.flags if not flag.local}
        assert _fields(described, components) == sent, operation.name


def test_one_rendering_for_both_command_lines():
    assert render.UNSET == UNSET
    renders = {operation.render for operation in table.operations()} - {None}
    assert renders == set(render.TEXTS) == {"watchdog", "recover", "emit"}


def test_the_readme_lists_every_long_run_endpoint_with_its_scope_and_script():
    """Issue 22: a reader finds each endpoint's path in the README, not by guessing."""
    import sys

    from tests.conftest import ROOT

    sys.path.insert(0, str(ROOT / "longrun" / "skill" / "scripts"))
    import _operations

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = [
        f"{op.method} /{_operations.API_ROOT}{op.path}"
        for name, script in _operations.SCRIPTS.items()
        for op in script.operations
        if op.method and (
            f"| `{op.method} /{_operations.API_ROOT}{op.path}` | `{op.scope}` | `{name}.py"
            not in readme
        )
    ]
    assert missing == []
