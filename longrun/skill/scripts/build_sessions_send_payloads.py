#!/usr/bin/env python3
"""Build tool-ready payloads for sessions_send from overdue long-run tasks (JSON always)."""

from __future__ import annotations

import argparse

from _xworkmate import run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split(" (")[0])
    parser.add_argument("--stale-minutes", type=int)
    parser.add_argument("--json", action="store_true", help="JSON is always emitted")
    args = parser.parse_args()
    run("GET", "build-sessions-send-payloads", query={"stale_minutes": args.stale_minutes})


if __name__ == "__main__":
    main()
