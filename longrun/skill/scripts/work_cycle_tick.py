#!/usr/bin/env python3
"""Work-cycle hook for long-run tasks: run after each meaningful step.

`must_send_now: true` (exit 1) is the gate: send the message first, then go on.
"""

from __future__ import annotations

import argparse

from _xworkmate import run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", required=True)
    parser.add_argument("--step", default="", help="What was just done in this work cycle")
    args = parser.parse_args()
    run("POST", "work-cycle-tick", body={"task": args.task, "step": args.step})


if __name__ == "__main__":
    main()
