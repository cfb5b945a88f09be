#!/usr/bin/env python3
"""Run long-run-mode watchdog once and print tool payloads + state side effects.

Each overdue task's message goes out through the server's outbox and counts
as sent only when the channel confirms it. The server's beat runs it every
5 minutes by itself. Needs the bridge's key (it covers every session).
"""

from __future__ import annotations

import argparse

from _xworkmate import run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stale-minutes", type=int)
    args = parser.parse_args()
    run("POST", "run-watchdog-once", body={"stale_minutes": args.stale_minutes})


if __name__ == "__main__":
    main()
