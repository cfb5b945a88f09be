#!/usr/bin/env python3
"""Build recovery suggestions for overdue long-run tasks (exit 1 when there are any)."""

from __future__ import annotations

from _xworkmate import run_script


def main() -> None:
    run_script("recover_due_tasks", description=__doc__.split(" (")[0])


if __name__ == "__main__":
    main()
