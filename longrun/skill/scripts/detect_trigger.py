#!/usr/bin/env python3
"""Whether a user message enters long-run mode, continues the session's task, or neither.

Prints `{"mode": "enter" | "continue" | "ordinary", …, "reason"}`; exit 1
when there is something to do (enter, or run work_cycle_tick.py first), 0
for an ordinary message. An agent key's session is its own.
"""

from __future__ import annotations

from _xworkmate import run_script


def main() -> None:
    run_script("detect-trigger", description=__doc__.splitlines()[0])


if __name__ == "__main__":
    main()
