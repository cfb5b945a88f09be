"""Benchmark: next-run computations per second, this engine next to cronsim.

Run from the repository root::

    python bench/schedule.py [--seconds 1.0]

For each zone, a mix of common 5-field expressions is computed from moments spread over
2026-2027 (DST changes included). "engine" is ``compute_next_run_ms`` with the parse
cache warm (how the scheduler uses it); "engine+parse" parses the expression on every
call as well. cronsim (installed for the benchmark only: ``pip install cronsim``) parses
and computes on every call, as that is its only API. Target (issue 5): at most 2x
cronsim's time per computation.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from plans.schedule import compute_next_run_ms, parse_cron

EXPRESSIONS = [
    "0 9 * * *",
    "30 8 * * 1-5",
    "*/15 * * * *",
    "0 */2 * * *",
    "15 14 1,15 * *",
    "0 0 1 * *",
    "5 4 * * sun",
    "0 22 * * 1-5",
    "30 2 * * *",
    "0 9-17 * 3,6,9,12 *",
]
ZONES = ["UTC", "Asia/Shanghai", "America/New_York", "Europe/Berlin", "Australia/Lord_Howe"]
START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
STEP_MS = 7_919_000  # ~2.2 h, co-prime with everything, covers two years in 8000 steps
MOMENTS = [START_MS + i * STEP_MS for i in range(8000)]


def _rate(run: Callable[[int], object], seconds: float) -> float:
    """Computations per second over at least ``seconds`` of wall time."""
    done = 0
    started = time.perf_counter()
    while True:
        for moment in MOMENTS[:500]:
            run(moment)
        done += 500
        elapsed = time.perf_counter() - started
        if elapsed >= seconds:
            return done / elapsed


def _engine(tz: str, *, parse: bool) -> Callable[[int], object]:
    schedules = [{"kind": "cron", "expr": expr, "tz": tz} for expr in EXPRESSIONS]
    count = len(schedules)

    def run(moment: int) -> object:
        schedule = schedules[moment % count]
        if parse:
            parse_cron(schedule["expr"])
        return compute_next_run_ms(schedule, now_ms=moment, host_tz="UTC")

    return run


def _cronsim(tz: str) -> Callable[[int], object] | None:
    try:  # optional: installed for the benchmark only
        from cronsim import CronSim  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return None
    zone = ZoneInfo(tz)
    count = len(EXPRESSIONS)

    def run(moment: int) -> object:
        start = datetime.fromtimestamp(moment / 1000, zone)
        return next(CronSim(EXPRESSIONS[moment % count], start))

    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    args = parser.parse_args()

    have_cronsim = _cronsim("UTC") is not None
    if not have_cronsim:
        print("cronsim is not installed (pip install cronsim); showing this engine only.\n")
    header = (
        f"{'zone':<22}{'engine/s':>12}{'engine+parse/s':>16}{'cronsim/s':>12}"
        f"{'time vs cronsim':>17}"
    )
    print(header)
    print("-" * len(header))
    totals = [0.0, 0.0, 0.0]
    for tz in ZONES:
        warm = _rate(_engine(tz, parse=False), args.seconds)
        cold = _rate(_engine(tz, parse=True), args.seconds)
        reference = _cronsim(tz)
        other = _rate(reference, args.seconds) if reference is not None else 0.0
        totals[0] += 1 / warm
        totals[1] += 1 / cold
        totals[2] += 1 / other if other else 0.0
        ratio = f"{other / warm:.2f}x / {other / cold:.2f}x" if other else "n/a"
        print(f"{tz:<22}{warm:>12,.0f}{cold:>16,.0f}{other:>12,.0f}{ratio:>17}")
    print("-" * len(header))
    n = len(ZONES)
    warm, cold = n / totals[0], n / totals[1]
    other = n / totals[2] if totals[2] else 0.0
    ratio = f"{other / warm:.2f}x / {other / cold:.2f}x" if other else "n/a"
    print(f"{'all (harmonic mean)':<22}{warm:>12,.0f}{cold:>16,.0f}{other:>12,.0f}{ratio:>17}")
    print(
        "\n'time vs cronsim' = this engine's time per computation / cronsim's "
        "(warm / with parse); the target is <= 2.00x."
    )
    if have_cronsim and cold and other and other / cold > 2.0:
        print("TARGET MISSED")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
