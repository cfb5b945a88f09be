#!/usr/bin/env python3
"""Manage long-run task state (the original task_state.py, on the xworkmate API).

Subcommands, flags, output and exit codes are the original's (D-B18): set,
touch-progress, mark-progress-attempt / -sent / -unknown / -failed,
mark-visible-reply, mark-tool-result, mark-resume, acquire-lock,
release-lock, locks, list, show, clear. See _xworkmate.py for the
environment.
"""

from __future__ import annotations

import argparse

from _xworkmate import run

_PROGRESS = (
    "touch-progress",
    "mark-progress-attempt",
    "mark-progress-sent",
    "mark-progress-unknown",
    "mark-progress-failed",
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Manage long-run task state")
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("set")
    for flag in (
        "--task",
        "--session",
        "--state",
        "--goal",
        "--done-when",
        "--blocked-when",
        "--boundary",
        "--next-check",
        "--note",
    ):
        s.add_argument(flag, required=True)
    s.add_argument("--origin-session-key")
    s.add_argument("--progress-every")
    s.add_argument("--force-lock", action="store_true")
    s.add_argument("--reopen", action="store_true", help="leave the state done (D-B17)")
    for name in _PROGRESS:
        one = sub.add_parser(name)
        one.add_argument("--task", required=True)
        if name in ("mark-progress-attempt", "mark-progress-unknown", "mark-progress-failed"):
            one.add_argument("--error")
        one.add_argument("--note", help="kept in the task log, not as the next step (D-B8)")
        one.add_argument("--delivery-id")
        one.add_argument("--message-hash")
    for name in ("mark-visible-reply", "mark-tool-result"):
        one = sub.add_parser(name)
        one.add_argument("--task", required=True)
        one.add_argument("--note")
    resume = sub.add_parser("mark-resume")
    resume.add_argument("--task", required=True)
    resume.add_argument("--reason")
    resume.add_argument("--note")
    acquire = sub.add_parser("acquire-lock")
    acquire.add_argument("--session", required=True, help="the session key")
    acquire.add_argument("--task", required=True)
    acquire.add_argument("--force", action="store_true")
    release = sub.add_parser("release-lock")
    release.add_argument("--session", required=True, help="the session key")
    release.add_argument("--task")
    sub.add_parser("locks")
    sub.add_parser("list")
    sub.add_parser("show").add_argument("--task", required=True)
    sub.add_parser("clear").add_argument("--task")
    return parser


def main() -> None:
    args = _parser().parse_args()
    fields = {name: value for name, value in vars(args).items() if name != "command"}
    if args.command in ("locks", "list"):
        run("GET", f"task-state/{args.command}")
    if args.command == "show":
        run("GET", "task-state/show", query={"task": args.task})
    run("POST", f"task-state/{args.command}", body=fields)


if __name__ == "__main__":
    main()
