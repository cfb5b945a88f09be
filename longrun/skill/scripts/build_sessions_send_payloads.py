#!/usr/bin/env python3
"""Build tool-ready payloads for sessions_send from overdue long-run tasks (JSON always)."""

from __future__ import annotations

from _xworkmate import run_script


def main() -> None:
    run_script("build_sessions_send_payloads", description=__doc__.split(" (")[0])


if __name__ == "__main__":
    main()
