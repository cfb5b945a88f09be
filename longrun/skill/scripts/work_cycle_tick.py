#!/usr/bin/env python3
"""Work-cycle hook for long-run tasks: run after each meaningful step.

`must_send_now: true` (exit 1) is the gate: send the message first, then go on.
"""

from __future__ import annotations

from _xworkmate import run_script


def main() -> None:
    run_script("work_cycle_tick", description=__doc__.splitlines()[0])


if __name__ == "__main__":
    main()
