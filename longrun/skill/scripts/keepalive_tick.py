#!/usr/bin/env python3
"""Keepalive check for long-run tasks: resume if idle for too long (exit 1 then)."""

from __future__ import annotations

from _xworkmate import run_script


def main() -> None:
    run_script("keepalive_tick", description=__doc__.split(" (")[0])


if __name__ == "__main__":
    main()
