#!/usr/bin/env python3
"""Keepalive check for long-run tasks: resume if idle for too long (exit 1 then)."""

from __future__ import annotations

import argparse

from _xworkmate import run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split(" (")[0])
    parser.add_argument("--task", required=True)
    parser.add_argument("--idle-seconds", type=int)
    args = parser.parse_args()
    run("GET", "keepalive-tick", query={"task": args.task, "idle_seconds": args.idle_seconds})


if __name__ == "__main__":
    main()
