#!/usr/bin/env python3
"""Foreground heartbeat helper: decide whether to report progress now and build the message if due.

Exit 1 when it is due (the original's).
"""

from __future__ import annotations

import argparse

from _xworkmate import run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", required=True)
    run("GET", "foreground-tick", query={"task": parser.parse_args().task})


if __name__ == "__main__":
    main()
