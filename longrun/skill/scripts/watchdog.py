#!/usr/bin/env python3
"""Check long-run task state for overdue follow-up (exit 1 when a task needs it)."""

from __future__ import annotations

import argparse
from typing import Any

from _xworkmate import call, error_lines, finish, shown


def _text(body: dict[str, Any]) -> str:
    lines: list[str] = []
    if not body["due"] and not body["progress"] and "errors" not in body:
        lines.append("watchdog: all tracked tasks are within expected window")
    if body["due"]:
        lines.append("watchdog: tasks needing follow-up")
        for item in body["due"]:
            lines += [
                f"- {item['task']} | {item['state']} | {shown(item['session'])} | {item['reason']}",
                f"  goal: {shown(item['goal'])}",
                f"  note: {shown(item['note'])}",
                f"  next: {shown(item['next_check'])} | updated: {item['updated_at']}",
            ]
    if body["progress"]:
        lines.append("watchdog: tasks needing visible progress update")
        for item in body["progress"]:
            lines += [
                f"- {item['task']} | {item['state']} | {shown(item['session'])} | {item['reason']}",
                f"  goal: {shown(item['goal'])}",
                f"  note: {shown(item['note'])}",
                f"  progress_every: {item['progress_every']} "
                f"| last_progress: {shown(item['last_progress_at'])}",
            ]
    lines += error_lines("watchdog: tasks that could not be checked", body)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split(" (")[0])
    check = parser.add_subparsers(dest="command", required=True).add_parser("check")
    check.add_argument("--stale-minutes", type=int)
    check.add_argument("--json", action="store_true")
    args = parser.parse_args()
    code, body = call("GET", "watchdog", query={"stale_minutes": args.stale_minutes})
    finish(code, body if args.json else _text(body))


if __name__ == "__main__":
    main()
