#!/usr/bin/env python3
"""Build dispatcher plan for foreground due events.

Actual sessions_send must be done by OpenClaw tool layer (exit 1 when there
are dispatches).
"""

from __future__ import annotations

from _xworkmate import run_script


def main() -> None:
    run_script("dispatch_foreground_due", description=__doc__.splitlines()[0])


if __name__ == "__main__":
    main()
