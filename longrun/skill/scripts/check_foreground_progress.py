#!/usr/bin/env python3
"""Check whether a tracked task must emit a foreground progress update now."""

from __future__ import annotations

import argparse

from _xworkmate import run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.rstrip("."))
    parser.add_argument("--task", required=True)
    run("GET", "check-foreground-progress", query={"task": parser.parse_args().task})


if __name__ == "__main__":
    main()
