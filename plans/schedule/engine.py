"""OpenClaw's next-run algorithm (``computeNextRunAtMs`` / ``computeJobNextRunAtMs``).

Schedules are OpenClaw's wire shapes of a cron job's `schedule`::

    {"kind": "at", "at": "2026-12-01T09:00:00+08:00"}
    {"kind": "every", "everyMs": 3600000, "anchorMs": 1773100800000}
    {"kind": "cron", "expr": "30 2 * * *", "tz": "America/New_York", "staggerMs": 0}

Computation is as lenient as OpenClaw (``everyMs`` is floored, a blank ``tz`` means the
host zone); :func:`validate_schedule` is the strict gate for creating a job. Deliberate
departures from OpenClaw, all from D-C2 (docs/decisions/plans.md):

* an ``at`` that is not a real ISO-8601 date-time (``2026-02-30``, ``T24:00``, a bare ``0``)
  is an error instead of whatever JavaScript's ``Date.parse`` makes of it;
* a cron expression that can never fire (``0 0 30 2 *``) answers ``None`` at once;
* when "now" is in the second pass of a repeated (fall-back) hour, croner maps the next
  matching wall time to its first occurrence, which is already past, and OpenClaw then
  gives up (no next run). Here the search goes on to the next wall time whose instant is
  in the future, which is exactly what a job that was already running would run next;
* a day croner skips at a month rollover fires (see :mod:`.cron`).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from functools import lru_cache

from xworkmate.lib.jstime import days_from_civil, days_in_month, ms_to_iso

from ._time import MAX_MS, MIN_MS, from_wall, resolve_zone, to_wall
from .cron import CronPattern, parse_cron
from .errors import ScheduleError

__all__ = [
    "DEFAULT_TOP_OF_HOUR_STAGGER_MS",
    "compute_next_run_ms",
    "next_runs",
    "parse_at_ms",
    "resolve_stagger_ms",
    "stagger_offset_ms",
    "validate_schedule",
]

DEFAULT_TOP_OF_HOUR_STAGGER_MS = 5 * 60 * 1000
_ONE_MINUTE_MS = 60_000
_YEAR_MS = 365.25 * 24 * 60 * 60 * 1000
_TEN_YEARS_MS = 10 * _YEAR_MS

_KINDS = ("at", "every", "cron")
_ALLOWED_KEYS = {
    "at": frozenset({"kind", "at"}),
    "every": frozenset({"kind", "everyMs", "anchorMs"}),
    "cron": frozenset({"kind", "expr", "tz", "staggerMs"}),
}

# ISO-8601 date or date-time as OpenClaw documents ``at``: a date alone is midnight UTC,
# a date-time without a zone is UTC. Fractions are truncated to milliseconds like V8.
_ISO_RE = re.compile(
    r"(?P<y>[0-9]{4})-(?P<mo>[0-9]{2})-(?P<d>[0-9]{2})"
    r"(?:T(?P<h>[0-9]{2}):(?P<mi>[0-9]{2})(?::(?P<s>[0-9]{2})(?:\.(?P<f>[0-9]{1,9}))?)?"
    r"(?P<z>[Zz]|[+-][0-9]{2}:?[0-9]{2})?)?"
)
_DIGITS_RE = re.compile(r"[0-9]+")


# --------------------------------------------------------------------------- helpers
def _finite(value: object) -> int | float | None:
    """The value when it is a finite JSON number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _kind(schedule: Mapping[str, object]) -> str:
    if not isinstance(schedule, Mapping):
        raise ScheduleError("invalid schedule: expected an object with a kind")
    raw = schedule.get("kind")
    # OpenClaw's normaliser trims and lower-cases the kind before anything else.
    kind = raw.strip().lower() if isinstance(raw, str) else raw
    if kind not in _KINDS:
        raise ScheduleError(
            f'invalid schedule.kind: expected "at", "every" or "cron" (got {raw!r})'
        )
    return str(kind)


def _check_instant(name: str, ms: int) -> int:
    if not MIN_MS <= ms <= MAX_MS:
        raise ScheduleError(f"{name} out of range: {ms}")
    return ms


def parse_at_ms(value: object) -> int:
    """Epoch milliseconds of an ``at`` value, as OpenClaw's ``parseAbsoluteTimeMs`` reads
    it: all digits = epoch ms; ``Z``/``z`` or ``±hh:mm``/``±hhmm`` = that offset;
    ``YYYY-MM-DD`` = midnight UTC; a date-time without a zone = UTC (not the host zone).

    Stricter than OpenClaw (D-C2): impossible dates (``2026-02-30``), hour 24, a bare
    ``0`` and anything else that is not ISO-8601 raise :class:`ScheduleError` with
    OpenClaw's message ``Invalid schedule.at: expected ISO-8601 timestamp (got ...)``.
    """
    error = ScheduleError(f"Invalid schedule.at: expected ISO-8601 timestamp (got {value})")
    if not isinstance(value, str):
        raise error
    raw = value.strip()
    if _DIGITS_RE.fullmatch(raw):
        ms = int(raw)
        if 0 < ms <= MAX_MS:  # "0" is rejected: V8 reads it as the year 2000
            return ms
        raise error
    match = _ISO_RE.fullmatch(raw)
    if match is None:
        raise error
    y, mo, d = int(match["y"]), int(match["mo"]), int(match["d"])
    if not (1 <= mo <= 12 and 1 <= d <= days_in_month(y, mo)):
        raise error
    h = int(match["h"] or 0)
    mi = int(match["mi"] or 0)
    s = int(match["s"] or 0)
    if h > 23 or mi > 59 or s > 59:
        raise error
    millis = int((match["f"] or "0").ljust(3, "0")[:3])
    offset_min = 0
    zone = match["z"]
    if zone and zone not in "Zz":
        digits = zone[1:].replace(":", "")
        oh, om = int(digits[:2]), int(digits[2:])
        if oh > 23 or om > 59:
            raise error
        offset_min = (oh * 60 + om) * (1 if zone[0] == "+" else -1)
    ms = (((days_from_civil(y, mo, d) * 24 + h) * 60 + mi - offset_min) * 60 + s) * 1000 + millis
    if not 0 < ms <= MAX_MS:
        raise error
    return ms


def resolve_stagger_ms(schedule: Mapping[str, object]) -> int:
    """The stagger window OpenClaw uses for a cron schedule (``resolveCronStaggerMs``).

    An explicit ``staggerMs`` wins (floored, at least 0; ``0`` means exact). Otherwise
    "recurring top-of-hour" expressions get 300000 ms: 5 fields with minute ``0`` and an
    hour field containing ``*``, or 6 fields with second and minute ``0``. Everything else
    (and every non-cron schedule) gets 0.
    """
    if _kind(schedule) != "cron":
        return 0
    explicit = _explicit_stagger(schedule.get("staggerMs"))
    if explicit is not None:
        return explicit
    expr = schedule.get("expr")
    fields = expr.split() if isinstance(expr, str) else []
    if len(fields) == 5:
        top = fields[0] == "0" and "*" in fields[1]
    elif len(fields) == 6:
        top = fields[0] == "0" and fields[1] == "0" and "*" in fields[2]
    else:
        top = False
    return DEFAULT_TOP_OF_HOUR_STAGGER_MS if top else 0


def _explicit_stagger(raw: object) -> int | None:
    # normalizeCronStaggerMs: numbers and numeric strings, floored, never negative.
    number = _finite(raw)
    if number is not None:
        numeric = float(number)
    elif isinstance(raw, str) and raw.strip():
        try:
            numeric = float(raw.strip())
        except ValueError:
            return None
    else:
        return None
    if not math.isfinite(numeric):
        return None
    return max(0, math.floor(numeric))


@lru_cache(maxsize=4096)
def stagger_offset_ms(job_id: str, stagger_ms: int) -> int:
    """The job's fixed offset inside its stagger window: the first four bytes of
    sha256(job id), big-endian, modulo the window; 0 for windows of 1 ms or less."""
    if stagger_ms <= 1:
        return 0
    digest = hashlib.sha256(job_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") % stagger_ms


@lru_cache(maxsize=1024)
def _pattern(expr: str) -> CronPattern:
    return parse_cron(expr)


def _cron_parts(schedule: Mapping[str, object], host_tz: str) -> tuple[CronPattern, str]:
    expr = schedule.get("expr")
    if not isinstance(expr, str) or not expr.strip():
        raise ScheduleError("invalid cron schedule: expr is required")
    tz = schedule.get("tz")
    if tz is not None and not isinstance(tz, str):
        raise ScheduleError(f"invalid schedule.tz: expected an IANA time zone name (got {tz!r})")
    zone_name = tz.strip() if isinstance(tz, str) and tz.strip() else host_tz
    # croner parses the pattern before it ever touches the zone, so its errors come first.
    return _pattern(expr.strip()), zone_name


def _cron_next_ms(pattern: CronPattern, zone_name: str, now_ms: int) -> int | None:
    """croner's ``nextRun(now)`` strictly after ``now``, with OpenClaw's retry.

    croner reads ``now`` as a local wall clock to the second, adds one second, finds the
    next matching wall time and maps it back to an instant (``from_wall``). Only a
    repeated hour can map back to the past; OpenClaw then retries one second later and
    otherwise reports no run. D-C2 replaces that dead end with the next wall time whose
    instant lies in the future.
    """
    zone = resolve_zone(zone_name)
    if not pattern.can_fire():
        return None
    now_s = now_ms // 1000
    wall = pattern.next_wall(to_wall(zone, now_s) + 1)
    while wall is not None:
        instant_ms = from_wall(zone, wall) * 1000
        if instant_ms > now_ms:
            return instant_ms
        wall = pattern.next_wall(wall + 1)
    return None


def _every_ms(schedule: Mapping[str, object]) -> int:
    # OpenClaw floors everyMs and never lets it drop below 1 ms.
    raw = schedule.get("everyMs")
    number = _finite(raw)
    if number is None:
        raise ScheduleError(f"invalid schedule.everyMs: expected a number (got {raw!r})")
    return max(1, math.floor(number))


def _every_next_ms(schedule: Mapping[str, object], now_ms: int) -> int:
    every = _every_ms(schedule)
    anchor_raw = schedule.get("anchorMs")
    anchor_number = _finite(anchor_raw)
    if anchor_raw is None:
        anchor = now_ms
    elif anchor_number is not None:
        anchor = max(0, math.floor(anchor_number))
    else:
        raise ScheduleError(f"invalid schedule.anchorMs: expected a number (got {anchor_raw!r})")
    if now_ms < anchor:
        return anchor
    # OpenClaw: anchor + max(1, ceil(elapsed / every)) * every. On an exact boundary past the
    # first step this is ``now`` itself, which OpenClaw treats as due.
    steps = max(1, (now_ms - anchor + every - 1) // every)
    return anchor + steps * every


# ------------------------------------------------------------------------- public API
def compute_next_run_ms(
    schedule: Mapping[str, object],
    *,
    now_ms: int,
    host_tz: str,
    job_id: str | None = None,
) -> int | None:
    """OpenClaw's next run for a schedule at ``now_ms``, or ``None`` for no further run.

    * ``at``: the timestamp when it is after ``now_ms``, else ``None``.
    * ``every``: the next step of ``anchorMs + k * everyMs`` (``anchorMs`` defaults to now).
    * ``cron``: the next croner match strictly after ``now_ms`` in ``tz`` (the host zone
      when ``tz`` is missing or blank). With a ``job_id`` the job's stagger applies
      (``computeStaggeredCronNextRunAtMs``): the search starts ``offset`` ms early and the
      offset is added to the match, so the first staggered slot after ``now`` is found.

    Raises :class:`ScheduleError` for an unknown kind, a bad expression, zone or ``at``.
    """
    kind = _kind(schedule)
    now_ms = _check_instant("now", int(now_ms))
    if kind == "at":
        at_ms = parse_at_ms(schedule.get("at"))
        return at_ms if at_ms > now_ms else None
    if kind == "every":
        return _every_next_ms(schedule, now_ms)
    pattern, zone_name = _cron_parts(schedule, host_tz)
    offset = stagger_offset_ms(job_id, resolve_stagger_ms(schedule)) if job_id else 0
    if offset <= 0:
        return _cron_next_ms(pattern, zone_name, now_ms)
    cursor = max(0, now_ms - offset)
    for _attempt in range(4):  # OpenClaw's bound; the first attempt always succeeds here
        base = _cron_next_ms(pattern, zone_name, cursor)
        if base is None:
            return None
        if base + offset > now_ms:
            return base + offset
        cursor = max(cursor + 1, base + 1000)
    return None  # pragma: no cover - unreachable: base > cursor = now - offset


def next_runs(
    schedule: Mapping[str, object],
    *,
    after_ms: int,
    count: int,
    host_tz: str,
    job_id: str | None = None,
) -> list[int]:
    """The next ``count`` runs after ``after_ms`` (epoch ms), as the reference corpus
    derives them from OpenClaw's job-level logic:

    * ``cron``: run 1 is :func:`compute_next_run_ms` at ``after_ms``; each following run
      is the same computation with "now" = the previous run (stagger included), which is
      what a job that just ran does. Fewer runs come back when the schedule ends.
    * ``every``: run 1 as :func:`compute_next_run_ms`, then one ``everyMs`` apart.
    * ``at``: the one timestamp, even when it is in the past (an ``at`` job stays due
      until it succeeds); use :func:`validate_schedule` to refuse past ones.
    """
    kind = _kind(schedule)
    if count <= 0:
        return []
    if kind == "at":
        _check_instant("afterMs", int(after_ms))
        return [parse_at_ms(schedule.get("at"))]
    first = compute_next_run_ms(schedule, now_ms=after_ms, host_tz=host_tz, job_id=job_id)
    runs: list[int] = []
    current = first
    if kind == "every":
        every = _every_ms(schedule)
        while current is not None and len(runs) < count:
            runs.append(current)
            current = current + every if current + every <= MAX_MS else None
        return runs
    while current is not None and len(runs) < count:
        runs.append(current)
        current = compute_next_run_ms(schedule, now_ms=current, host_tz=host_tz, job_id=job_id)
    return runs


def validate_schedule(
    schedule: Mapping[str, object],
    *,
    now_ms: int,
    min_every_ms: int = 1,
    host_tz: str,
) -> None:
    """Raise :class:`ScheduleError` unless the schedule may be used to create a job.

    Checks, in OpenClaw's order where it has one: the kind; unknown properties (the gateway
    schema forbids them, and a misspelt ``timezone`` must not silently mean the host
    zone); ``at`` as OpenClaw's ``validateScheduleTimestamp`` (not ISO-8601, more than one
    minute in the past, more than ten years ahead, with its messages verbatim);
    ``everyMs`` an integer >= ``min_every_ms`` and ``anchorMs`` an integer >= 0; ``expr``
    with croner's message, ``tz`` an IANA zone, ``staggerMs`` a number >= 0.
    """
    kind = _kind(schedule)
    unexpected = sorted(set(schedule) - _ALLOWED_KEYS[kind])
    if unexpected:
        raise ScheduleError(
            f"invalid schedule: unexpected property {unexpected[0]!r} for kind {kind!r}"
        )
    now_ms = _check_instant("now", int(now_ms))
    if kind == "at":
        at_ms = parse_at_ms(schedule.get("at"))
        diff = at_ms - now_ms
        if diff < -_ONE_MINUTE_MS:
            raise ScheduleError(
                f"schedule.at is in the past: {ms_to_iso(at_ms)} "
                f"({(-diff) // _ONE_MINUTE_MS} minutes ago). Current time: {ms_to_iso(now_ms)}"
            )
        if diff > _TEN_YEARS_MS:
            raise ScheduleError(
                f"schedule.at is too far in the future: {ms_to_iso(at_ms)} "
                f"({math.floor(diff / _YEAR_MS)} years ahead). Maximum allowed: 10 years"
            )
        return
    if kind == "every":
        every = schedule.get("everyMs")
        every_number = _finite(every)
        minimum = max(1, min_every_ms)
        if every_number is None or every_number % 1 or every_number < minimum:
            raise ScheduleError(
                f"invalid schedule.everyMs: expected an integer >= {minimum} (got {every!r})"
            )
        anchor = schedule.get("anchorMs")
        anchor_number = _finite(anchor)
        if anchor is not None and (
            anchor_number is None or anchor_number % 1 or not 0 <= anchor_number <= MAX_MS
        ):
            raise ScheduleError(
                f"invalid schedule.anchorMs: expected an integer >= 0 (got {anchor!r})"
            )
        return
    _, zone_name = _cron_parts(schedule, host_tz)  # croner's pattern errors come first
    resolve_zone(zone_name)
    stagger = schedule.get("staggerMs")
    stagger_number = _finite(stagger)
    if stagger is not None and (stagger_number is None or stagger_number < 0):
        raise ScheduleError(f"invalid schedule.staggerMs: expected a number >= 0 (got {stagger!r})")
