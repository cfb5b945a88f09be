#!/usr/bin/env python3
"""Build a foreground progress update message for a tracked long-run task."""

from __future__ import annotations

from _xworkmate import run_script


def main() -> None:
    run_script("build_progress_update", description=__doc__.rstrip("."))


if __name__ == "__main__":
    main()
