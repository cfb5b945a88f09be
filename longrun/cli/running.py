"""The original skill's scripts as one command line (D-B18).

`manage.py longrun <script> …` and the console script `xworkmate-longrun
<script> …` take the original scripts' names (`task_state.py` or
`task_state`), subcommands and flags, print what the scripts printed (JSON
with `ensure_ascii=False, indent=2`, or their lines of text) on stdout and
their errors on stderr, and end with their exit codes, so an agent that
follows SKILL.md needs no change. Each script is one call of a selector or a
service; this module only parses and prints. Bad arguments exit 2, as
argparse made the originals exit.

Where the scripts took a threshold (`--stale-minutes`, `--idle-seconds`,
`--unknown-cooldown-minutes`), leaving it out means the configured one
(`[longrun]`), whose defaults are the scripts' defaults; the few other
departures are D-B23's.

Beside the scripts: `detect-trigger` says whether a user message enters
long-run mode (D-B1); `import-state` and `export-state` move the original's
`.task-state.json` in and out (D-B22).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import sys
import tempfile
import time
from argparse import ArgumentParser, ArgumentTypeError, Namespace
from collections.abc import Callable, Sequence
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, TextIO

from django.db import close_old_connections
from django.utils import timezone

from longrun import selectors, services
from longrun.policies.answers import EXIT_INVALID, EXIT_OK, Answer, LongrunError
from longrun.policies.messages import UNSET
from longrun.policies.statefile import STATE_FILE_MAX_CHARS, parse_state, state_file_error
from longrun.policies.timing import MAX_THRESHOLD_MINUTES, MAX_THRESHOLD_SECONDS
from xworkmate.auth import Caller

__all__ = ["SCRIPTS", "keep_stderr_for_errors", "run"]

# Who the task log names for a change made from the command line (D-K12).
_BY = Caller.command_line().name
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class _Script:
    description: str  # the original's argparse description
    arguments: Callable[[ArgumentParser], None]
    run: Callable[[Namespace], Answer]
    suffix: str = ".py"


def run(argv: Sequence[str], *, prog: str, stdout: TextIO, stderr: TextIO) -> int:
    """Run one script with its arguments; returns its exit code."""
    if not argv or argv[0] in ("-h", "--help"):
        out = stdout if argv else stderr
        out.write(_usage(prog) + "\n")
        return 0 if argv else EXIT_INVALID
    found = _script_named(argv[0])
    if found is None:
        stderr.write(f"{_usage(prog)}\n{prog}: error: unknown script {argv[0]!r}\n")
        return EXIT_INVALID
    name, script = found
    # The original's program name, so argparse's messages read as before.
    parser = ArgumentParser(prog=name + script.suffix, description=script.description)
    script.arguments(parser)
    with redirect_stdout(stdout), redirect_stderr(stderr):
        try:
            args = parser.parse_args(argv[1:])
        except SystemExit as exited:  # --help (0) or a bad argument (2)
            return exited.code if isinstance(exited.code, int) else EXIT_INVALID
    try:
        answer = script.run(args)
    except LongrunError as refused:
        stderr.write(refused.text + "\n")
        return refused.exit_code
    _print(answer.body, stdout)
    return answer.exit_code


def _script_named(word: str) -> tuple[str, _Script] | None:
    """`task_state`, `task_state.py`, or SKILL.md's path to it (`…/scripts/task_state.py`)."""
    base = Path(word).name
    for name, script in SCRIPTS.items():
        if base in (name, name + script.suffix):
            return name, script
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


def _count(maximum: int) -> Callable[[str], int]:
    """argparse's `type=int`, refusing 0 and below (no threshold of zero means
    anything) and more than `maximum` (a year: MAX_THRESHOLD_MINUTES / _SECONDS)."""

    def count(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise ArgumentTypeError(f"invalid int value: {text!r}") from None
        if value < 1:
            raise ArgumentTypeError(f"must be 1 or more (got {value})")
        if value > maximum:
            raise ArgumentTypeError(f"must be at most {maximum}, a year (got {value})")
        return value

    return count


_minute_count = _count(MAX_THRESHOLD_MINUTES)
_second_count = _count(MAX_THRESHOLD_SECONDS)


def _minutes(value: int | None) -> timedelta | None:
    return None if value is None else timedelta(minutes=value)


def _seconds(value: int | None) -> timedelta | None:
    return None if value is None else timedelta(seconds=value)


def _shown(value: object) -> str:
    """A value in a line of text; an empty one prints 未设置, never None (D-B14)."""
    return UNSET if value is None or value == "" else str(value)


# --- task_state.py (§7.1) ------------------------------------------------------------------------


def _task_state_arguments(parser: ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="command", required=True)

    def command(name: str, handler: Callable[[Namespace], Answer]) -> ArgumentParser:
        one = sub.add_parser(name)
        one.set_defaults(handler=handler)
        return one

    s = command("set", _set)
    s.add_argument("--task", required=True)
    s.add_argument("--session", required=True)
    # Not `choices`: an unknown state is the original's `invalid state: <x>` (exit 2).
    s.add_argument("--state", required=True)
    s.add_argument("--origin-session-key", dest="origin_session_key")
    s.add_argument("--goal", required=True)
    s.add_argument("--done-when", required=True, dest="done_when")
    s.add_argument("--blocked-when", required=True, dest="blocked_when")
    s.add_argument("--boundary", required=True)
    s.add_argument("--next-check", required=True, dest="next_check")
    s.add_argument("--note", required=True)
    s.add_argument("--progress-every", dest="progress_every")
    s.add_argument("--force-lock", action="store_true", dest="force_lock")
    s.add_argument(
        "--reopen", action="store_true", help="leave the state done (D-B17: needed for that)"
    )

    for name, outcome in (
        ("touch-progress", "touch"),
        ("mark-progress-attempt", "attempt"),
        ("mark-progress-sent", "sent"),
        ("mark-progress-unknown", "unknown"),
        ("mark-progress-failed", "failed"),
    ):
        one = command(name, _progress)
        one.set_defaults(outcome=outcome)
        one.add_argument("--task", required=True)
        if outcome in ("attempt", "unknown", "failed"):
            one.add_argument("--error")
        one.add_argument("--note", help="kept in the task log, not as the next step (D-B8)")
        one.add_argument("--delivery-id", dest="delivery_id")
        one.add_argument("--message-hash", dest="message_hash")

    for name, signal in (
        ("mark-visible-reply", "visible_reply"),
        ("mark-tool-result", "tool_result"),
    ):
        one = command(name, _activity)
        one.set_defaults(signal=signal)
        one.add_argument("--task", required=True)
        one.add_argument("--note")

    resume = command("mark-resume", _resume)
    resume.add_argument("--task", required=True)
    resume.add_argument("--reason")
    resume.add_argument("--note")

    acquire = command("acquire-lock", _acquire)
    acquire.add_argument("--session", required=True, help="the session key")
    acquire.add_argument("--task", required=True)
    acquire.add_argument("--force", action="store_true")

    release = command("release-lock", _release)
    release.add_argument("--session", required=True, help="the session key")
    release.add_argument("--task")

    command("locks", lambda args: selectors.locks_show())
    command("list", lambda args: selectors.tasks_list())
    command("show", lambda args: selectors.task_show(name=args.task)).add_argument(
        "--task", required=True
    )
    command("clear", _clear).add_argument("--task")


def _set(args: Namespace) -> Answer:
    return services.task_set(
        name=args.task,
        session=args.session,
        state=args.state,
        goal=args.goal,
        done_when=args.done_when,
        blocked_when=args.blocked_when,
        boundary=args.boundary,
        next_check=args.next_check,
        note=args.note,
        origin_session_key=args.origin_session_key or "",
        progress_every=args.progress_every or "",
        force_lock=args.force_lock,
        reopen=args.reopen,
        by=_BY,
        now=timezone.now(),
    )


def _progress(args: Namespace) -> Answer:
    return services.task_progress_record(
        name=args.task,
        outcome=args.outcome,
        error=getattr(args, "error", None) or "",
        note=args.note or "",
        delivery_id=args.delivery_id or "",
        message_hash=args.message_hash or "",
        by=_BY,
        now=timezone.now(),
    )


def _activity(args: Namespace) -> Answer:
    return services.task_activity_record(
        name=args.task, signal=args.signal, note=args.note or "", by=_BY, now=timezone.now()
    )


def _resume(args: Namespace) -> Answer:
    return services.task_resume_record(
        name=args.task, reason=args.reason or "", note=args.note or "", by=_BY, now=timezone.now()
    )


def _acquire(args: Namespace) -> Answer:
    return services.lock_acquire(
        session_key=args.session, name=args.task, force=args.force, now=timezone.now()
    )


def _release(args: Namespace) -> Answer:
    return services.lock_release(session_key=args.session, name=args.task or "")


def _clear(args: Namespace) -> Answer:
    return services.task_clear(name=args.task) if args.task else services.tasks_clear_all()


# --- validation and the foreground heartbeat (§7.2–§7.8) -----------------------------------------


def _task_argument(parser: ArgumentParser) -> None:
    parser.add_argument("--task", required=True)


def _validate_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("--task", required=True)
    parser.add_argument("--expect-session-key")
    parser.add_argument("--expect-state", action="append", dest="expect_states")


def _work_cycle_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("--task", required=True)
    parser.add_argument("--step", default="", help="What was just done in this work cycle")


def _stale_argument(parser: ArgumentParser) -> None:
    parser.add_argument(
        "--stale-minutes", type=_minute_count, help="default: the configured longrun.stale (10m)"
    )


def _cooldown_argument(parser: ArgumentParser) -> None:
    parser.add_argument(
        "--unknown-cooldown-minutes",
        type=_minute_count,
        help="default: the configured longrun.unknown_cooldown (2m)",
    )


def _idle_argument(parser: ArgumentParser) -> None:
    parser.add_argument(
        "--idle-seconds", type=_second_count, help="default: the configured longrun.idle (60s)"
    )


def _emit_foreground_arguments(parser: ArgumentParser) -> None:
    _stale_argument(parser)
    _cooldown_argument(parser)


def _keepalive_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("--task", required=True)
    _idle_argument(parser)


def _stale_json_arguments(parser: ArgumentParser) -> None:
    _stale_argument(parser)
    parser.add_argument("--json", action="store_true")


def _payload_arguments(parser: ArgumentParser) -> None:
    _stale_argument(parser)
    parser.add_argument(
        "--json", action="store_true", help="kept for symmetry; JSON is always emitted"
    )


def _watchdog_arguments(parser: ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="command", required=True)
    _stale_json_arguments(sub.add_parser("check"))


# --- the watchdog's human-readable modes (§7.10) -------------------------------------------------


def _error_lines(title: str, body: dict[str, Any]) -> list[str]:
    """The tasks a run could not handle (D-B5), after the original's lines."""
    errors = body.get("errors", [])
    return [title, *(f"- {item['task']} | {item['error']}" for item in errors)] if errors else []


def _watchdog_lines(item: dict[str, Any]) -> list[str]:
    return [
        f"- {item['task']} | {item['state']} | {_shown(item['session'])} | {item['reason']}",
        f"  goal: {_shown(item['goal'])}",
        f"  note: {_shown(item['note'])}",
    ]


def _watchdog(args: Namespace) -> Answer:
    answer = selectors.watchdog_check(now=timezone.now(), stale=_minutes(args.stale_minutes))
    if args.json:
        return answer
    body = answer.body
    lines: list[str] = []
    if not body["due"] and not body["progress"] and "errors" not in body:
        lines.append("watchdog: all tracked tasks are within expected window")
    if body["due"]:
        lines.append("watchdog: tasks needing follow-up")
        for item in body["due"]:
            lines += _watchdog_lines(item)
            lines.append(f"  next: {_shown(item['next_check'])} | updated: {item['updated_at']}")
    if body["progress"]:
        lines.append("watchdog: tasks needing visible progress update")
        for item in body["progress"]:
            lines += _watchdog_lines(item)
            lines.append(
                f"  progress_every: {item['progress_every']} "
                f"| last_progress: {_shown(item['last_progress_at'])}"
            )
    lines += _error_lines("watchdog: tasks that could not be checked", body)
    return Answer(answer.exit_code, "\n".join(lines))


def _recover(args: Namespace) -> Answer:
    answer = selectors.recovery_report(now=timezone.now(), stale=_minutes(args.stale_minutes))
    if args.json:
        return answer
    body = answer.body
    if not body["items"]:
        lines = [] if "errors" in body else ["recover: no overdue tasks"]
    else:
        lines = [
            f"recover: {body['due_count']} overdue task(s), "
            f"{body['progress_count']} progress update(s)"
        ]
    for item in body["items"]:
        recovery = item["recovery"]
        lines += [
            f"- task: {item['task']}",
            f"  kind: {item['kind']}",
            f"  state/session: {item['state']} / {_shown(item['session'])}",
            f"  reason: {item['reason']}",
            f"  goal: {_shown(item['goal'])}",
            f"  note: {_shown(item['note'])}",
            f"  suggested action: {recovery['kind']}",
            f"  suggested session: {_shown(recovery['suggested_session'])}",
            f"  suggested sessionKey: {recovery['suggested_session_key']}",
            f"  suggested message: {recovery['suggested_message']}",
        ]
    lines += _error_lines("recover: tasks that could not be checked", body)
    return Answer(answer.exit_code, "\n".join(lines))


def _emit_recovery(args: Namespace) -> Answer:
    answer = selectors.recovery_messages(now=timezone.now(), stale=_minutes(args.stale_minutes))
    if args.json:
        return answer
    body = answer.body
    messages = [item["message"] for item in body["messages"]]
    separator = "\n\n" + "=" * 60 + "\n\n"
    lines = [separator.join(messages)] if messages else []
    lines += _error_lines("emit: tasks that could not be checked", body)
    return Answer(answer.exit_code, "\n".join(lines) or "emit: no recovery messages to send")


# --- the shell helpers (§7.12): Celery beat runs these jobs; kept for agents that call them -------


def _log_file() -> str:
    return os.environ.get("LOG_FILE") or os.path.join(
        tempfile.gettempdir(), "long-run-mode-watchdog.log"
    )


def _cron_arguments(parser: ArgumentParser) -> None:
    parser.add_argument(
        "interval",
        nargs="?",
        type=_minute_count,
        default=5,
        help="minutes between runs (default 5)",
    )


def _install_watchdog_cron(args: Namespace) -> Answer:
    """Print the crontab entry (it installs nothing, as the original installed nothing)."""
    command = Path(sys.executable).with_name("xworkmate-longrun")
    env = " ".join(
        f"{name}={shlex.quote(os.environ[name])}"
        for name in ("XWORKMATE_CONFIG", "XWORKMATE_HOME")
        if os.environ.get(name)
    )
    line = (
        f"*/{args.interval} * * * * {env + ' ' if env else ''}{shlex.quote(str(command))} "
        f"run_watchdog_once >> {shlex.quote(_log_file())} 2>&1"
    )
    return Answer(
        EXIT_OK,
        "\n".join(
            (
                f"# 建议添加到 crontab 的条目（每 {args.interval} 分钟跑一次兜底回收）",
                "# 可选环境变量：LOG_FILE、XWORKMATE_CONFIG、XWORKMATE_HOME",
                "# Celery beat 已按周期任务 longrun-watchdog 运行同一回收；"
                "只有不运行 beat 时才需要这一条",
                line,
            )
        ),
    )


def _watchdog_loop(args: Namespace) -> Answer:
    """Every INTERVAL_SECONDS: the recovery report and a keepalive run, appended to LOG_FILE.

    Runs until it is stopped, as the original loop did.
    """
    try:
        interval = _second_count(os.environ.get("INTERVAL_SECONDS") or "60")
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
        with open(_log_file(), "a", encoding="utf-8") as log:
            stamp = timezone.now().astimezone(zone).strftime("%Y-%m-%d %H:%M:%S %z")
            log.write(f"\n[{stamp}] watchdog tick\n")
            for argv in (
                ["recover_due_tasks", "--json"],
                ["run_keepalive_once", "--idle-seconds", str(interval)],
            ):
                run(argv, prog="watchdog_loop", stdout=log, stderr=log)
        time.sleep(interval)


# --- beside the scripts ---------------------------------------------------------------------------


def _trigger_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("--message", required=True, help="the user's message")
    parser.add_argument(
        "--session-key", default="", help="the session it came from (to find its active task)"
    )


def _import_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("file", help="the original's .task-state.json (- reads stdin)")
    parser.add_argument(
        "--replace", action="store_true", help="forget the tasks in the store first"
    )


def _import_state(args: Namespace) -> Answer:
    # One character past the limit is enough to know a file is too long (D-B27).
    most = STATE_FILE_MAX_CHARS + 1
    try:
        if args.file == "-":
            text = sys.stdin.read(most)
        else:
            with open(args.file, encoding="utf-8") as file:
                text = file.read(most)
    except (OSError, ValueError) as exc:  # unreadable, not UTF-8
        raise state_file_error(str(exc)) from None
    return services.tasks_import(
        document=parse_state(text),
        replace=args.replace,
        # The path as the system gave it: bytes that are not UTF-8 come as
        # lone surrogates, which no log line or database column takes.
        source=os.fsencode(args.file).decode("utf-8", "backslashreplace"),
        by="import-state",
        now=timezone.now(),
    )


def _cleanup_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("--apply", action="store_true")
    parser.add_argument("--drop-task", action="append", default=[])
    # Added to the default 回归- (the original's argparse append did the same).
    parser.add_argument("--drop-test-prefix", action="append", default=[])


def _no_arguments(parser: ArgumentParser) -> None:
    """A script without arguments of its own (only --help)."""


SCRIPTS: dict[str, _Script] = {
    "task_state": _Script(
        "Manage long-run task state", _task_state_arguments, lambda args: args.handler(args)
    ),
    "validate_task_start": _Script(
        "Validate that a long-run task was actually bound to the intended real session",
        _validate_arguments,
        lambda args: selectors.task_start_validation(
            name=args.task,
            expect_session_key=args.expect_session_key or "",
            expect_states=args.expect_states or (),
        ),
    ),
    "check_foreground_progress": _Script(
        "Check whether a tracked task must emit a foreground progress update now",
        _task_argument,
        lambda args: selectors.foreground_check(name=args.task, now=timezone.now()),
    ),
    "build_progress_update": _Script(
        "Build a foreground progress update message for a tracked long-run task",
        _task_argument,
        lambda args: selectors.progress_update(name=args.task),
    ),
    "foreground_tick": _Script(
        "Foreground heartbeat helper: decide whether to report progress now and build the "
        "message if due",
        _task_argument,
        lambda args: selectors.foreground_tick(name=args.task, now=timezone.now()),
    ),
    "work_cycle_tick": _Script(
        "Work-cycle hook for long-run tasks: run after each meaningful step",
        _work_cycle_arguments,
        lambda args: selectors.work_cycle_tick(name=args.task, step=args.step, now=timezone.now()),
    ),
    "emit_foreground_due": _Script(
        "Emit foreground progress events for due long-run tasks",
        _emit_foreground_arguments,
        lambda args: selectors.foreground_due_events(
            now=timezone.now(),
            stale=_minutes(args.stale_minutes),
            unknown_cooldown=_minutes(args.unknown_cooldown_minutes),
        ),
    ),
    "dispatch_foreground_due": _Script(
        "Build dispatcher plan for foreground due events; actual sessions_send must be done "
        "by OpenClaw tool layer",
        _cooldown_argument,
        lambda args: selectors.foreground_dispatch_plan(
            now=timezone.now(), unknown_cooldown=_minutes(args.unknown_cooldown_minutes)
        ),
    ),
    "keepalive_tick": _Script(
        "Keepalive check for long-run tasks: resume if idle for too long",
        _keepalive_arguments,
        lambda args: selectors.keepalive_tick(
            name=args.task, now=timezone.now(), idle=_seconds(args.idle_seconds)
        ),
    ),
    "emit_keepalive_resume": _Script(
        "Emit keepalive resume event for a long-run task when idle too long",
        _keepalive_arguments,
        lambda args: selectors.keepalive_resume_event(
            name=args.task, now=timezone.now(), idle=_seconds(args.idle_seconds)
        ),
    ),
    "run_keepalive_once": _Script(
        "Run keepalive once for all active long-run tasks and auto-resume overdue sessions",
        _idle_argument,
        lambda args: services.keepalive_run_once(
            now=timezone.now(), idle=_seconds(args.idle_seconds), by=_BY
        ),
    ),
    "watchdog": _Script(
        "Check long-run task state for overdue follow-up", _watchdog_arguments, _watchdog
    ),
    "recover_due_tasks": _Script(
        "Build recovery suggestions for overdue long-run tasks", _stale_json_arguments, _recover
    ),
    "emit_recovery_message": _Script(
        "Emit human-readable recovery messages for overdue tasks",
        _stale_json_arguments,
        _emit_recovery,
    ),
    "build_sessions_send_payloads": _Script(
        "Build tool-ready payloads for sessions_send from overdue long-run tasks",
        _payload_arguments,
        lambda args: selectors.sessions_send_payloads(
            now=timezone.now(), stale=_minutes(args.stale_minutes)
        ),
    ),
    "run_watchdog_once": _Script(
        "Run long-run-mode watchdog once and print tool payloads + state side effects",
        _stale_argument,
        lambda args: services.watchdog_run_once(
            now=timezone.now(), stale=_minutes(args.stale_minutes), by=_BY
        ),
    ),
    "cleanup_state": _Script(
        "Clean up long-run-mode state file and drop invalid test/stale records",
        _cleanup_arguments,
        lambda args: services.tasks_cleanup(
            now=timezone.now(),
            apply=args.apply,
            drop_tasks=args.drop_task,
            drop_test_prefixes=args.drop_test_prefix,
        ),
    ),
    "install_watchdog_cron": _Script(
        "Print a crontab entry that runs run_watchdog_once every INTERVAL minutes",
        _cron_arguments,
        _install_watchdog_cron,
        ".sh",
    ),
    "watchdog_loop": _Script(
        "Every INTERVAL_SECONDS, append the recovery report and a keepalive run to LOG_FILE",
        _no_arguments,
        _watchdog_loop,
        ".sh",
    ),
    "detect-trigger": _Script(
        "Whether a user message enters long-run mode, continues the session's active long "
        "task, or is ordinary, and why (D-B1)",
        _trigger_arguments,
        lambda args: selectors.message_mode(message=args.message, session_key=args.session_key),
        "",
    ),
    "import-state": _Script(
        "Load the original's .task-state.json into the store; invalid records are reported "
        "and skipped, the rest imported in one transaction",
        _import_arguments,
        _import_state,
        "",
    ),
    "export-state": _Script(
        "Print the store in the original's .task-state.json format",
        _no_arguments,
        lambda args: selectors.state_export(),
        "",
    ),
}
