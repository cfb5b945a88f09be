#!/usr/bin/env python3
"""Build dispatcher plan for foreground due events.

Actual sessions_send must be done by OpenClaw tool layer (exit 1 when there
are dispatches).
"""

from __future__ import annotations

import argparse

from _xworkmate import run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--unknown-cooldown-minutes", type=int)
    args = parser.parse_args()
    run(
        "GET",
        "dispatch-foreground-due",
        query={"unknown_cooldown_minutes": args.unknown_cooldown_minutes},
    )


if __name__ == "__main__":
    main()
