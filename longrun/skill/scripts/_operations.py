"""The long-run operations, each declared once: its script, flags, endpoint, scope and text.

One entry per script of the original skill (and its subcommands), plus the
command line's own (detect-trigger, import-state, export-state, the two shell
helpers). From it the skill's wrapper scripts build their parsers and find
their endpoint (_xworkmate.py), the server's command line builds the same
parsers (longrun.cli), the server's URLs are laid out (longrun.urls) and its
views take their scope (longrun.api). A flag, an endpoint's path or an
operation's scope is spelled here; the endpoints' fields and the scope their
description names are checked against it (tests/longrun/test_operations.py).

Standard library only, and cheap to import: the wrappers import it from their
own folder (they run without the server's packages, and must start about as
fast as the original scripts); the server loads this same file
(longrun.operations).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

READ, WRITE = "longrun:read", "longrun:write"
# Where the endpoints are, under the server's root.
API_ROOT = "api/longrun/"
GET, POST = "GET", "POST"


class Flag(NamedTuple):
    """One argument of a script: an option (`--task`) or a positional (`file`)."""

    name: str
    help: str | None = None
    required: bool = False
    action: str | None = None
    dest: str | None = None
    default: Any = None
    nargs: str | None = None
    # "text" is a string; "minutes" and "seconds" are counts, which each side
    # reads its own way (the command line refuses 0 and more than a year
    # itself, a wrapper leaves that to the server).
    kind: str = "text"
    # Read by the script itself and never sent (--json: print the document).
    local: bool = False

    @property
    def wire(self) -> str:
        """Its name in a query or a body: the flag in snake case (`--origin-session-key`)."""
        return self.name.lstrip("-").replace("-", "_")

    @property
    def attribute(self) -> str:
        """Where argparse puts its value."""
        return self.dest or self.wire


class Operation(NamedTuple):
    """One script, or one subcommand of a script, and its endpoint."""

    name: str  # the operation's id: its OpenAPI operation is `longrun_<name>`
    flags: tuple[Flag, ...] = ()
    command: str | None = None  # the subcommand of its script, if it has them
    method: str | None = None  # GET or POST; None: only the command line runs it
    path: str | None = None  # under API_ROOT
    scope: str | None = None  # what an API key needs to call it
    render: str | None = None  # its text without --json (_render.TEXTS)
    url_name: str | None = None  # when not `longrun-<name>`

    @property
    def route(self) -> str | None:
        return None if self.path is None else API_ROOT + self.path

    @property
    def view_name(self) -> str:
        return self.url_name or f"longrun-{self.name}"


class Script(NamedTuple):
    """A script as it is called (`task_state.py`), with its operations."""

    name: str
    description: str  # the original's argparse description
    operations: tuple[Operation, ...]
    suffix: str = ".py"

    @property
    def has_commands(self) -> bool:
        return self.operations[0].command is not None

    @property
    def wrapper(self) -> str | None:
        """The file name of its wrapper script in the skill folder, if it has an endpoint."""
        if not any(operation.path for operation in self.operations):
            return None
        return self.name.replace("-", "_") + ".py"


# --- the flags several scripts share -------------------------------------------------------------

TASK = Flag("--task", required=True)
STALE = Flag(
    "--stale-minutes", kind="minutes", help="default: the configured longrun.stale (10m)"
)
COOLDOWN = Flag(
    "--unknown-cooldown-minutes",
    kind="minutes",
    help="default: the configured longrun.unknown_cooldown (2m)",
)
IDLE = Flag("--idle-seconds", kind="seconds", help="default: the configured longrun.idle (60s)")
JSON = Flag("--json", action="store_true", local=True)
_LOCK_SESSION = Flag("--session", required=True, help="the session key")


def _state(
    command: str,
    flags: tuple[Flag, ...] = (),
    *,
    method: str = POST,
    scope: str = WRITE,
    url_name: str | None = None,
) -> Operation:
    """A subcommand of task_state.py, at task-state/<subcommand>."""
    return Operation(
        command, flags, command, method, f"task-state/{command}", scope, url_name=url_name
    )


def _endpoint(
    name: str, method: str, scope: str, *flags: Flag, render: str | None = None
) -> Operation:
    """A script of its own, at its name."""
    return Operation(name, flags, None, method, name, scope, render)


def _progress(command: str, url_name: str, *, error: bool = True) -> Operation:
    flags = (
        TASK,
        *((Flag("--error"),) if error else ()),
        Flag("--note", help="kept in the task log, not as the next step (D-B8)"),
        Flag("--delivery-id"),
        Flag("--message-hash"),
    )
    return _state(command, flags, url_name=url_name)


# --- task_state.py (§7.1) ------------------------------------------------------------------------

_TASK_STATE = (
    _state(
        "set",
        (
            TASK,
            Flag("--session", required=True),
            # Not `choices`: an unknown state is the original's `invalid state: <x>` (exit 2).
            Flag("--state", required=True),
            Flag("--origin-session-key"),
            Flag("--goal", required=True),
            Flag("--done-when", required=True),
            Flag("--blocked-when", required=True),
            Flag("--boundary", required=True),
            Flag("--next-check", required=True),
            Flag("--note", required=True),
            Flag("--progress-every"),
            Flag("--force-lock", action="store_true"),
            Flag(
                "--reopen",
                action="store_true",
                help="leave the state done (D-B17: needed for that)",
            ),
        ),
    ),
    _progress("touch-progress", "longrun-touch", error=False),
    _progress("mark-progress-attempt", "longrun-mark-attempt"),
    _progress("mark-progress-sent", "longrun-mark-sent", error=False),
    _progress("mark-progress-unknown", "longrun-mark-unknown"),
    _progress("mark-progress-failed", "longrun-mark-failed"),
    _state("mark-visible-reply", (TASK, Flag("--note"))),
    _state("mark-tool-result", (TASK, Flag("--note"))),
    _state("mark-resume", (TASK, Flag("--reason"), Flag("--note"))),
    _state("acquire-lock", (_LOCK_SESSION, TASK, Flag("--force", action="store_true"))),
    _state("release-lock", (_LOCK_SESSION, Flag("--task"))),
    _state("locks", method=GET, scope=READ),
    _state("list", method=GET, scope=READ),
    _state("show", (TASK,), method=GET, scope=READ),
    _state("clear", (Flag("--task"),)),
)


def _one(name: str, description: str, operation: Operation, suffix: str = ".py") -> Script:
    return Script(name, description, (operation,), suffix)


SCRIPTS: dict[str, Script] = {
    script.name: script
    for script in (
        Script("task_state", "Manage long-run task state", _TASK_STATE),
        # --- validation and the foreground heartbeat (§7.2–§7.8) ---
        _one(
            "validate_task_start",
            "Validate that a long-run task was actually bound to the intended real session",
            _endpoint(
                "validate-task-start",
                GET,
                READ,
                TASK,
                Flag("--expect-session-key"),
                Flag("--expect-state", action="append", dest="expect_states"),
            ),
        ),
        _one(
            "check_foreground_progress",
            "Check whether a tracked task must emit a foreground progress update now",
            _endpoint("check-foreground-progress", GET, READ, TASK),
        ),
        _one(
            "build_progress_update",
            "Build a foreground progress update message for a tracked long-run task",
            _endpoint("build-progress-update", GET, READ, TASK),
        ),
        _one(
            "foreground_tick",
            "Foreground heartbeat helper: decide whether to report progress now and build the "
            "message if due",
            _endpoint("foreground-tick", GET, READ, TASK),
        ),
        _one(
            "work_cycle_tick",
            "Work-cycle hook for long-run tasks: run after each meaningful step",
            # A POST although it writes nothing: the step text may be longer than a URL takes.
            _endpoint(
                "work-cycle-tick",
                POST,
                READ,
                TASK,
                Flag("--step", default="", help="What was just done in this work cycle"),
            ),
        ),
        _one(
            "emit_foreground_due",
            "Emit foreground progress events for due long-run tasks",
            _endpoint("emit-foreground-due", GET, READ, STALE, COOLDOWN),
        ),
        _one(
            "dispatch_foreground_due",
            "Build dispatcher plan for foreground due events; actual sessions_send must be done "
            "by OpenClaw tool layer",
            _endpoint("dispatch-foreground-due", GET, READ, COOLDOWN),
        ),
        # --- keepalive (§7.9) ---
        _one(
            "keepalive_tick",
            "Keepalive check for long-run tasks: resume if idle for too long",
            _endpoint("keepalive-tick", GET, READ, TASK, IDLE),
        ),
        _one(
            "emit_keepalive_resume",
            "Emit keepalive resume event for a long-run task when idle too long",
            _endpoint("emit-keepalive-resume", GET, READ, TASK, IDLE),
        ),
        _one(
            "run_keepalive_once",
            "Run keepalive once for all active long-run tasks and auto-resume overdue sessions",
            _endpoint("run-keepalive-once", POST, WRITE, IDLE),
        ),
        # --- the watchdog and recovery (§7.10) ---
        Script(
            "watchdog",
            "Check long-run task state for overdue follow-up",
            (Operation("watchdog", (STALE, JSON), "check", GET, "watchdog", READ, "watchdog"),),
        ),
        _one(
            "recover_due_tasks",
            "Build recovery suggestions for overdue long-run tasks",
            _endpoint("recover-due-tasks", GET, READ, STALE, JSON, render="recover"),
        ),
        _one(
            "emit_recovery_message",
            "Emit human-readable recovery messages for overdue tasks",
            _endpoint("emit-recovery-message", GET, READ, STALE, JSON, render="emit"),
        ),
        _one(
            "build_sessions_send_payloads",
            "Build tool-ready payloads for sessions_send from overdue long-run tasks",
            _endpoint(
                "build-sessions-send-payloads",
                GET,
                READ,
                STALE,
                JSON._replace(help="kept for symmetry; JSON is always emitted"),
            ),
        ),
        _one(
            "run_watchdog_once",
            "Run long-run-mode watchdog once and print tool payloads + state side effects",
            _endpoint("run-watchdog-once", POST, WRITE, STALE),
        ),
        _one(
            "cleanup_state",
            "Clean up long-run-mode state file and drop invalid test/stale records",
            _endpoint(
                "cleanup-state",
                POST,
                WRITE,
                Flag("--apply", action="store_true"),
                Flag("--drop-task", action="append", default=()),
                # Added to the default 回归- (the original's argparse append did the same).
                Flag("--drop-test-prefix", action="append", default=()),
            ),
        ),
        # --- the shell helpers (§7.12): Celery beat runs these jobs; kept for agents ---
        _one(
            "install_watchdog_cron",
            "Print a crontab entry that runs run_watchdog_once every INTERVAL minutes",
            Operation(
                "install-watchdog-cron",
                (
                    Flag(
                        "interval",
                        nargs="?",
                        kind="minutes",
                        default=5,
                        help="minutes between runs (default 5)",
                    ),
                ),
            ),
            ".sh",
        ),
        _one(
            "watchdog_loop",
            "Every INTERVAL_SECONDS, append the recovery report and a keepalive run to LOG_FILE",
            Operation("watchdog-loop"),
            ".sh",
        ),
        # --- beside the scripts ---
        _one(
            "detect-trigger",
            "Whether a user message enters long-run mode, continues the session's active long "
            "task, or is ordinary, and why (D-B1)",
            _endpoint(
                "detect-trigger",
                POST,
                READ,
                Flag("--message", required=True, help="the user's message"),
                Flag(
                    "--session-key",
                    help="the session it came from (to find its active task)",
                ),
            ),
            "",
        ),
        _one(
            "import-state",
            "Load the original's .task-state.json into the store; invalid records are reported "
            "and skipped, the rest imported in one transaction",
            Operation(
                "import-state",
                (
                    Flag("file", help="the original's .task-state.json (- reads stdin)"),
                    Flag(
                        "--replace",
                        action="store_true",
                        help="forget the tasks in the store first",
                    ),
                ),
            ),
            "",
        ),
        _one(
            "export-state",
            "Print the store in the original's .task-state.json format",
            Operation("export-state"),
            "",
        ),
    )
}


def operations() -> list[Operation]:
    """Every operation, in the order of the scripts and their subcommands."""
    return [operation for script in SCRIPTS.values() for operation in script.operations]


def parser(
    script: Script,
    counts: Mapping[str, Callable[[str], int]],
    *,
    prog: str | None = None,
    description: str | None = None,
) -> argparse.ArgumentParser:
    """The script's parser; `counts` reads each kind of count ("minutes", "seconds").

    The parsed arguments carry their operation (`operation`), and the
    subcommand's name (`command`) for a script that has subcommands.
    """
    top = argparse.ArgumentParser(prog=prog, description=description or script.description)
    if not script.has_commands:
        _arguments(top, script.operations[0], counts)
        return top
    sub = top.add_subparsers(dest="command", required=True)
    for operation in script.operations:
        _arguments(sub.add_parser(str(operation.command)), operation, counts)
    return top


def _arguments(
    parser: argparse.ArgumentParser,
    operation: Operation,
    counts: Mapping[str, Callable[[str], int]],
) -> None:
    parser.set_defaults(operation=operation)
    for flag in operation.flags:
        default = flag.default
        if flag.action == "append" and default is not None:
            default = list(default)  # each run its own list
        options = {
            "help": flag.help,
            "required": flag.required or None,
            "action": flag.action,
            "dest": flag.dest,
            "default": default,
            "nargs": flag.nargs,
            "type": counts.get(flag.kind),
        }
        parser.add_argument(
            flag.name, **{name: value for name, value in options.items() if value is not None}
        )
