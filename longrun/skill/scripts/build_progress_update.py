#!/usr/bin/env python3
"""Build a foreground progress update message for a tracked long-run task."""

from __future__ import annotations

import argparse

from _xworkmate import run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.rstrip("."))
    parser.add_argument("--task", required=True)
    run("GET", "build-progress-update", query={"task": parser.parse_args().task})


if __name__ == "__main__":
    main()
