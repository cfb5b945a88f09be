#!/usr/bin/env python3
"""Validate that a long-run task was actually bound to the intended real session.

Only `ok: true` (exit 0) lets the agent say the mode is on; a failed
validation exits 2, an unknown task 1 (the original's answers).
"""

from __future__ import annotations

import argparse

from _xworkmate import run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", required=True)
    parser.add_argument("--expect-session-key")
    parser.add_argument("--expect-state", action="append")
    args = parser.parse_args()
    run(
        "GET",
        "validate-task-start",
        query={
            "task": args.task,
            "expect_session_key": args.expect_session_key,
            "expect_state": args.expect_state,
        },
    )


if __name__ == "__main__":
    main()
