#!/usr/bin/env python3
"""Emit keepalive resume event for a long-run task when idle too long (exit 1 then)."""

from __future__ import annotations

from _xworkmate import run_script


def main() -> None:
    run_script("emit_keepalive_resume", description=__doc__.split(" (")[0])


if __name__ == "__main__":
    main()
