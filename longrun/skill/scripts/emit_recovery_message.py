#!/usr/bin/env python3
"""Emit human-readable recovery messages for overdue tasks (exit 1 when there are any)."""

from __future__ import annotations

import argparse
from typing import Any

from _xworkmate import call, error_lines, finish


def _text(body: dict[str, Any]) -> str:
    messages = [item["message"] for item in body["messages"]]
    separator = "\n\n" + "=" * 60 + "\n\n"
    lines = [separator.join(messages)] if messages else []
    lines += error_lines("emit: tasks that could not be checked", body)
    return "\n".join(lines) or "emit: no recovery messages to send"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split(" (")[0])
    parser.add_argument("--stale-minutes", type=int)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    code, body = call("GET", "emit-recovery-message", query={"stale_minutes": args.stale_minutes})
    finish(code, body if args.json else _text(body))


if __name__ == "__main__":
    main()
