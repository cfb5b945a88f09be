#!/usr/bin/env python3
"""Validate that a long-run task was actually bound to the intended real session.

Only `ok: true` (exit 0) lets the agent say the mode is on; a failed
validation exits 2, an unknown task 1 (the original's answers).
"""

from __future__ import annotations

from _xworkmate import run_script


def main() -> None:
    run_script("validate_task_start", description=__doc__.splitlines()[0])


if __name__ == "__main__":
    main()
