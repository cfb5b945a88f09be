"""One script's run: find it, parse its arguments as the table declares them, call, print."""

from __future__ import annotations

import json
import logging
import os
import re
import time
from argparse import ArgumentTypeError, Namespace
from collections.abc import Callable, Sequence
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any, TextIO

from django.db import close_old_connections
from django.utils import timezone

from longrun import selectors
from longrun.cli import beside, monitors, shell, task_state
from longrun.cli._args import COUNTS, second_count
from longrun.operations import render, table
from longrun.policies.answers import EXIT_INVALID, Answer, LongrunError

__all__ = ["HANDLERS", "SCRIPTS", "keep_stderr_for_errors", "run"]

# The scripts by name (the skill's operation table), in the order `--help` lists them.
SCRIPTS = table.SCRIPTS
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def run(argv: Sequence[str], *, prog: str, stdout: TextIO, stderr: TextIO) -> int:
    """Run one script with its arguments; returns its exit code."""
    if not argv or argv[0] in ("-h", "--help"):
        out = stdout if argv else stderr
        out.write(_usage(prog) + "\n")
        return 0 if argv else EXIT_INVALID
    script = _script_named(argv[0])
    if script is None:
        stderr.write(f"{_usage(prog)}\n{prog}: error: unknown script {argv[0]!r}\n")
        return EXIT_INVALID
    # The original's program name, so argparse's messages read as before.
    parser = table.parser(script, COUNTS, prog=script.name + script.suffix)
    with redirect_stdout(stdout), redirect_stderr(stderr):
        try:
            args = parser.parse_args(argv[1:])
        except SystemExit as exited:  # --help (0) or a bad argument (2)
            return exited.code if isinstance(exited.code, int) else EXIT_INVALID
    operation: table.Operation = args.operation
    try:
        answer = HANDLERS[operation.name](args)
    except LongrunError as refused:
        stderr.write(refused.text + "\n")
        return refused.exit_code
    if operation.render is not None and not args.json:
        # The report's lines, as the skill's wrapper prints them.
        answer = Answer(answer.exit_code, render.TEXTS[operation.render](answer.body))
    _print(answer.body, stdout)
    return answer.exit_code


def _script_named(word: str) -> table.Script | None:
    """`task_state`, `task_state.py`, or SKILL.md's path to it (`…/scripts/task_state.py`)."""
    base = Path(word).name
    for name, script in SCRIPTS.items():
        if base in (name, name + script.suffix):
            return script
    return None


def keep_stderr_for_errors() -> None:
    """Only warnings and errors of the service on stderr; the rest goes to the log file.

    An agent reads a script's stderr as the script's error (`task not found: A`,
    a lock conflict as JSON); an INFO line there would be one more error to it.
    """
    for handler in logging.getLogger().handlers:
        # Exactly the console handler: a file handler is a StreamHandler too.
        if type(handler) is logging.StreamHandler:
            handler.setLevel(logging.WARNING)


def _usage(prog: str) -> str:
    names = ", ".join(name + script.suffix for name, script in SCRIPTS.items())
    return (
        f"usage: {prog} SCRIPT [ARGS ...]\n"
        f"  SCRIPT (with or without its suffix, or a path ending in it): {names}"
    )


def _print(body: Any, out: TextIO) -> None:
    if isinstance(body, str):
        text = body
    else:
        # A lone surrogate (a name in a state file, D-B27) is written as the
        # JSON escape it was read from: no UTF-8 stream takes it raw.
        text = _LONE_SURROGATE.sub(
            lambda char: f"\\u{ord(char.group()):04x}",
            json.dumps(body, ensure_ascii=False, indent=2),
        )
    out.write(text + "\n")


# The loop runs other scripts through `run`, so it lives beside it.
def _watchdog_loop(args: Namespace) -> Answer:
    """Every INTERVAL_SECONDS: the recovery report and a keepalive run, appended to LOG_FILE.

    Runs until it is stopped, as the original loop did.
    """
    try:
        interval = second_count(os.environ.get("INTERVAL_SECONDS") or "60")
    except ArgumentTypeError as exc:
        raise LongrunError(
            exit_code=EXIT_INVALID,
            body=f"invalid INTERVAL_SECONDS: {exc}",
            field="INTERVAL_SECONDS",
            rule="seconds between ticks, 1 or more",
        ) from None
    zone = selectors.longrun_rules().zone
    while True:
        close_old_connections()  # a connection may have died while the loop slept
        with open(shell.log_file(), "a", encoding="utf-8") as log:
            stamp = timezone.now().astimezone(zone).strftime("%Y-%m-%d %H:%M:%S %z")
            log.write(f"\n[{stamp}] watchdog tick\n")
            for argv in (
                ["recover_due_tasks", "--json"],
                ["run_keepalive_once", "--idle-seconds", str(interval)],
            ):
                run(argv, prog="watchdog_loop", stdout=log, stderr=log)
        time.sleep(interval)


# What runs each operation, by its name in the table.
HANDLERS: dict[str, Callable[[Namespace], Answer]] = {
    "watchdog-loop": _watchdog_loop,
    **task_state.HANDLERS,
    **monitors.HANDLERS,
    **shell.HANDLERS,
    **beside.HANDLERS,
}
