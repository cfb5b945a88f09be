#!/usr/bin/env python3
"""Manage long-run task state (the original task_state.py, on the xworkmate API).

Subcommands, flags, output and exit codes are the original's (D-B18): set,
touch-progress, mark-progress-attempt / -sent / -unknown / -failed,
mark-visible-reply, mark-tool-result, mark-resume, acquire-lock,
release-lock, locks, list, show, clear. See _xworkmate.py for the
environment.
"""

from __future__ import annotations

from _xworkmate import run_script


def main() -> None:
    run_script("task_state")


if __name__ == "__main__":
    main()
