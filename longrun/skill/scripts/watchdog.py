#!/usr/bin/env python3
"""Check long-run task state for overdue follow-up (exit 1 when a task needs it)."""

from __future__ import annotations

from _xworkmate import run_script


def main() -> None:
    run_script("watchdog", description=__doc__.split(" (")[0])


if __name__ == "__main__":
    main()
