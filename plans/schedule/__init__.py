"""Framework-free schedule engine: OpenClaw-compatible next-run times.

Parses and validates OpenClaw schedules (``at``, ``every``, ``cron`` with croner 10's
syntax), computes next runs exactly as OpenClaw does (DST included) with the deliberate
exceptions of D-C2 (docs/decisions/plans.md), and describes schedules for people. No Django here.
"""

from .cron import CronPattern, parse_cron
from .describe import describe_schedule
from .engine import (
    DEFAULT_TOP_OF_HOUR_STAGGER_MS,
    compute_next_run_ms,
    next_runs,
    parse_at_ms,
    resolve_stagger_ms,
    stagger_offset_ms,
    validate_schedule,
)
from .errors import ScheduleError

__all__ = [
    "DEFAULT_TOP_OF_HOUR_STAGGER_MS",
    "CronPattern",
    "ScheduleError",
    "compute_next_run_ms",
    "describe_schedule",
    "next_runs",
    "parse_at_ms",
    "parse_cron",
    "resolve_stagger_ms",
    "stagger_offset_ms",
    "validate_schedule",
]
