#!/usr/bin/env python3
"""Emit human-readable recovery messages for overdue tasks (exit 1 when there are any)."""

from __future__ import annotations

from _xworkmate import run_script


def main() -> None:
    run_script("emit_recovery_message", description=__doc__.split(" (")[0])


if __name__ == "__main__":
    main()
