#!/usr/bin/env python3
"""Check whether a tracked task must emit a foreground progress update now."""

from __future__ import annotations

from _xworkmate import run_script


def main() -> None:
    run_script("check_foreground_progress", description=__doc__.rstrip("."))


if __name__ == "__main__":
    main()
