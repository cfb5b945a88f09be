#!/usr/bin/env python3
"""Emit foreground progress events for due long-run tasks.

The events are generated, not sent (exit 1 when there are any).
"""

from __future__ import annotations

import argparse

from _xworkmate import run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stale-minutes", type=int)
    parser.add_argument("--unknown-cooldown-minutes", type=int)
    args = parser.parse_args()
    run(
        "GET",
        "emit-foreground-due",
        query={
            "stale_minutes": args.stale_minutes,
            "unknown_cooldown_minutes": args.unknown_cooldown_minutes,
        },
    )


if __name__ == "__main__":
    main()
