"""Soak the embedded default: the whole service as `xworkmate run` starts it, under load.

    .venv/bin/python -m bench.soak [--minutes 30] [--plans 2] [--longruns 3] [--keep DIR]

For `--minutes` (default 30) threads drive long tasks' heartbeats, plan runs now
on confirmed plans with their webhook deliveries to a local receiver, and
/healthz, at once; then the outbox drains and the table says what happened:
requests, messages enqueued and delivered, plan runs requested and recorded,
worker deaths and restarts, errors (bench/_soak.py; D-K20). Exit code 1 when
the worker died or restarted, a message or run went missing, or the worker's
log shows a traceback.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from bench._soak import soak


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--plans", type=int, default=2,
                        help="plans run now in a loop, one thread each")
    parser.add_argument("--longruns", type=int, default=3,
                        help="long tasks heartbeating, one thread each")
    parser.add_argument("--keep", type=Path, default=None,
                        help="keep the data home and the run's log in this folder")
    args = parser.parse_args(argv)
    stamp = time.strftime("%H:%M:%S", time.gmtime())
    print(f"{stamp} soak of the embedded default for {args.minutes:g} min", flush=True)
    result = soak(args.minutes, plans=args.plans, longruns=args.longruns, base=args.keep,
                  progress=lambda line: print(line, flush=True))
    print(result.table())
    for line in result.errors + result.log_errors:
        print("  " + line)
    print("PASS" if result.ok else "FAIL")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
