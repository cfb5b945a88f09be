#!/usr/bin/env python3
"""Run keepalive once for all active long-run tasks and auto-resume overdue sessions.

The server's beat runs it every minute by itself; resumes are only planned
unless longrun.auto_resume is on. Needs the bridge's key (it covers every
session).
"""

from __future__ import annotations

import argparse

from _xworkmate import run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle-seconds", type=int)
    args = parser.parse_args()
    run("POST", "run-keepalive-once", body={"idle_seconds": args.idle_seconds})


if __name__ == "__main__":
    main()
