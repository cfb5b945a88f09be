#!/usr/bin/env python3
"""Emit foreground progress events for due long-run tasks.

The events are generated, not sent (exit 1 when there are any).
"""

from __future__ import annotations

from _xworkmate import run_script


def main() -> None:
    run_script("emit_foreground_due", description=__doc__.splitlines()[0])


if __name__ == "__main__":
    main()
