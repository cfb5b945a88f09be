#!/usr/bin/env python3
"""Clean up long-run-mode state and drop invalid test/stale records.

A report unless --apply. Needs the bridge's key (it covers every session).
"""

from __future__ import annotations

from _xworkmate import run_script


def main() -> None:
    run_script("cleanup_state", description=__doc__.splitlines()[0])


if __name__ == "__main__":
    main()
