#!/usr/bin/env python3
"""Run keepalive once for all active long-run tasks and auto-resume overdue sessions.

The server's beat runs it every minute by itself; resumes are only planned
unless longrun.auto_resume is on. Needs the bridge's key (it covers every
session).
"""

from __future__ import annotations

from _xworkmate import run_script


def main() -> None:
    run_script("run_keepalive_once", description=__doc__.splitlines()[0])


if __name__ == "__main__":
    main()
