#!/usr/bin/env python3
"""Build recovery suggestions for overdue long-run tasks (exit 1 when there are any)."""

from __future__ import annotations

import argparse
from typing import Any

from _xworkmate import call, error_lines, finish, shown


def _text(body: dict[str, Any]) -> str:
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
            f"  state/session: {item['state']} / {shown(item['session'])}",
            f"  reason: {item['reason']}",
            f"  goal: {shown(item['goal'])}",
            f"  note: {shown(item['note'])}",
            f"  suggested action: {recovery['kind']}",
            f"  suggested session: {shown(recovery['suggested_session'])}",
            f"  suggested sessionKey: {recovery['suggested_session_key']}",
            f"  suggested message: {recovery['suggested_message']}",
        ]
    lines += error_lines("recover: tasks that could not be checked", body)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split(" (")[0])
    parser.add_argument("--stale-minutes", type=int)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    code, body = call("GET", "recover-due-tasks", query={"stale_minutes": args.stale_minutes})
    finish(code, body if args.json else _text(body))


if __name__ == "__main__":
    main()
