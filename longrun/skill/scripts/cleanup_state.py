#!/usr/bin/env python3
"""Clean up long-run-mode state and drop invalid test/stale records.

A report unless --apply. Needs the bridge's key (it covers every session).
"""

from __future__ import annotations

import argparse

from _xworkmate import run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apply", action="store_true")
    parser.add_argument("--drop-task", action="append", default=[])
    # Added to the default 回归-, as the original's argparse append did.
    parser.add_argument("--drop-test-prefix", action="append", default=[])
    args = parser.parse_args()
    run(
        "POST",
        "cleanup-state",
        body={
            "apply": args.apply,
            "drop_task": args.drop_task,
            "drop_test_prefix": args.drop_test_prefix,
        },
    )


if __name__ == "__main__":
    main()
