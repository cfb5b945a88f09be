#!/usr/bin/env python3
"""Foreground heartbeat helper: decide whether to report progress now and build the message if due.

Exit 1 when it is due (the original's).
"""

from __future__ import annotations

from _xworkmate import run_script


def main() -> None:
    run_script("foreground_tick", description=__doc__.splitlines()[0])


if __name__ == "__main__":
    main()
