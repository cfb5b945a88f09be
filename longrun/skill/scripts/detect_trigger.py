#!/usr/bin/env python3
"""Whether a user message enters long-run mode, continues the session's task, or neither.

Prints `{"mode": "enter" | "continue" | "ordinary", …, "reason"}`; exit 1
when there is something to do (enter, or run work_cycle_tick.py first), 0
for an ordinary message. An agent key's session is its own.
"""

from __future__ import annotations

import argparse

from _xworkmate import run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--message", required=True, help="the user's message, verbatim")
    parser.add_argument("--session-key", help="the session it came from (the bridge's key)")
    args = parser.parse_args()
    run("POST", "detect-trigger", body={"message": args.message, "session_key": args.session_key})


if __name__ == "__main__":
    main()
