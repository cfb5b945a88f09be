#!/usr/bin/env python3
"""Run long-run-mode watchdog once and print tool payloads + state side effects.

Each overdue task's message goes out through the server's outbox and counts
as sent only when the channel confirms it. The server's beat runs it every
5 minutes by itself. Needs the bridge's key (it covers every session).
"""

from __future__ import annotations

from _xworkmate import run_script


def main() -> None:
    run_script("run_watchdog_once", description=__doc__.splitlines()[0])


if __name__ == "__main__":
    main()
