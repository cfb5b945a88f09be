"""Hypothesis properties of the schedule engine (issue 5, requirement 5).

* successive runs strictly increase, and the first is after the start;
* every run matches the expression on the local wall clock, unless it is the documented
  DST shift: a time inside a spring-forward gap runs shifted forward by the gap (D-C2);
* in UTC the runs are exactly the matches an independent brute-force search finds;
* ``every`` runs are evenly spaced on the anchor's grid;
* a staggered job runs at the unstaggered times plus its fixed offset.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st

from plans.schedule import (
    compute_next_run_ms,
    next_runs,
    parse_cron,
    resolve_stagger_ms,
    stagger_offset_ms,
)

ZONES = [
    "UTC",
    "America/New_York",
    "Europe/London",
    "Europe/Berlin",
    "Australia/Lord_Howe",
    "Pacific/Chatham",
    "Asia/Shanghai",
    "America/Sao_Paulo",
    "America/St_Johns",
    "Asia/Kolkata",
]
START = 1_767_225_600_000  # 2026-01-01T00:00:00Z
END = 1_893_456_000_000  # 2030-01-01T00:00:00Z
# Moments around the 2026-2027 DST changes of the zones above, so they get exercised often.
DST_MOMENTS = [
    1_772_953_200_000,  # 2026-03-08 NY spring forward
    1_793_512_800_000,  # 2026-11-01 NY fall back
    1_774_746_000_000,  # 2026-03-29 EU spring forward
    1_792_890_000_000,  # 2026-10-25 EU fall back
    1_775_314_800_000,  # 2026-04-05 Lord Howe fall back
    1_791_214_200_000,  # 2026-10-04 Lord Howe spring forward
    1_775_311_200_000,  # 2026-04-05 Chatham fall back
    1_806_764_400_000,  # 2027-04-04 Lord Howe fall back
]

# ---------------------------------------------------------------- field strategies
# Each strategy yields (field text, allowed values) so the oracle below never parses.


def _field(low: int, high: int) -> st.SearchStrategy[tuple[str, frozenset[int]]]:
    every = st.just(("*", frozenset(range(low, high + 1))))
    single = st.integers(low, high).map(lambda v: (str(v), frozenset({v})))
    step = st.integers(1, max(1, (high - low) // 2)).map(
        lambda s: (f"*/{s}", frozenset(range(low, high + 1, s)))
    )

    @st.composite
    def ranged(draw: st.DrawFn) -> tuple[str, frozenset[int]]:
        a = draw(st.integers(low, high))
        b = draw(st.integers(a, high))
        s = draw(st.integers(1, 6))
        if s == 1:
            return f"{a}-{b}", frozenset(range(a, b + 1))
        return f"{a}-{b}/{s}", frozenset(range(a, b + 1, s))

    listed = st.sets(st.integers(low, high), min_size=1, max_size=4).map(
        lambda values: (",".join(str(v) for v in sorted(values)), frozenset(values))
    )
    return st.one_of(every, single, step, ranged(), listed)


@st.composite
def simple_cron(draw: st.DrawFn) -> tuple[str, list[frozenset[int]], bool, bool]:
    """A 5-field expression from numbers, ranges, steps and lists, with its value sets."""
    fields = [
        draw(_field(0, 59)),
        draw(_field(0, 23)),
        draw(_field(1, 31)),
        draw(_field(1, 12)),
        draw(_field(0, 6)),
    ]
    expr = " ".join(text for text, _ in fields)
    return expr, [values for _, values in fields], fields[2][0] == "*", fields[4][0] == "*"


SPECIAL_EXPRS = st.sampled_from(
    [
        "0 0 L * *",
        "0 12 LW * *",
        "30 9 15W * *",
        "0 8 * * 5L",
        "0 8 * * 1#2",
        "0 8 1,15 * +MON",
        "0 12 ? * MON",
        "*/20 * * * * *",
        "0 30 2 * * *",
        "0 0 29 2 *",
        "@daily",
        "@hourly",
        "@weekly",
        "15 1,2,3 * * *",
        "*/7 0-4 * * *",
        "45 1 * * 0",
        "0 0 31 * *",
        "0 0 1,30 * *",
    ]
)


def _wall(ms: int, zone: ZoneInfo) -> datetime:
    return datetime.fromtimestamp(ms / 1000, zone).replace(tzinfo=None)


def _is_gap_shift(ms: int, zone: ZoneInfo, expr: str) -> bool:
    """The run is a wall time inside a spring-forward gap, moved forward by the gap."""
    pattern = parse_cron(expr)
    instant = datetime.fromtimestamp(ms / 1000, UTC)
    after = instant.astimezone(zone).utcoffset()
    before = (instant - timedelta(hours=3)).astimezone(zone).utcoffset()
    assert after is not None and before is not None
    gap = after - before
    if gap <= timedelta(0):
        return False
    intended = _wall(ms, zone) - gap
    # The intended wall time does not exist: it reads back differently after a round trip.
    round_trip = intended.replace(tzinfo=zone).astimezone(UTC).astimezone(zone)
    return pattern.matches(intended) and round_trip.replace(tzinfo=None) != intended


def _starts() -> st.SearchStrategy[int]:
    near_dst = st.tuples(
        st.sampled_from(DST_MOMENTS), st.integers(-2 * 86_400_000, 2 * 86_400_000)
    ).map(sum)
    return st.one_of(st.integers(START, END), near_dst)


@settings(max_examples=150, deadline=None)
@given(
    st.one_of(simple_cron().map(lambda spec: spec[0]), SPECIAL_EXPRS),
    st.sampled_from(ZONES),
    _starts(),
)
def test_runs_increase_and_match_local_time(expr: str, tz: str, after: int) -> None:
    zone = ZoneInfo(tz)
    pattern = parse_cron(expr)
    runs = next_runs(
        {"kind": "cron", "expr": expr, "tz": tz}, after_ms=after, count=8, host_tz="UTC"
    )
    if not runs:  # e.g. "* * 30-30 2 *": only expressions that can never fire end at once
        assert not pattern.can_fire(), expr
        return
    assert runs[0] > after
    assert all(a < b for a, b in pairwise(runs))
    for run in runs:
        assert pattern.matches(_wall(run, zone)) or _is_gap_shift(run, zone, expr), (
            expr,
            tz,
            run,
        )


def _oracle_next(
    sets: list[frozenset[int]], star_dom: bool, star_dow: bool, after: int
) -> int | None:
    """Brute force in UTC, written from the cron rules, not from the engine: day by day,
    then the allowed hours, minutes. Day-of-month and day-of-week are OR-ed unless one of
    them is ``*`` (croner's rule, where ``*/N`` counts as restricted)."""
    minutes, hours, doms, months, dows = sets
    start = datetime.fromtimestamp(after // 1000, UTC).replace(second=0) + timedelta(minutes=1)
    day = start.replace(hour=0, minute=0)
    for _ in range(366 * 8):
        dom_ok = day.day in doms
        dow_ok = (day.isoweekday() % 7) in dows
        if star_dow:
            day_ok = dom_ok
        elif star_dom:
            day_ok = dow_ok
        else:
            day_ok = dom_ok or dow_ok
        if day.month in months and day_ok:
            for hour in sorted(hours):
                for minute in sorted(minutes):
                    candidate = day.replace(hour=hour, minute=minute)
                    if candidate >= start:
                        return int(candidate.timestamp() * 1000)
        day += timedelta(days=1)
    return None  # nothing within eight years (Feb 30 and the like)


@settings(max_examples=150, deadline=None)
@given(simple_cron(), st.integers(START, END))
def test_utc_runs_equal_an_independent_brute_force(
    spec: tuple[str, list[frozenset[int]], bool, bool], after: int
) -> None:
    expr, sets, star_dom, star_dow = spec
    runs = next_runs(
        {"kind": "cron", "expr": expr, "tz": "UTC"}, after_ms=after, count=3, host_tz="UTC"
    )
    expected: list[int] = []
    cursor = after
    for _ in range(3):
        found = _oracle_next(sets, star_dom, star_dow, cursor)
        if found is None:
            break
        expected.append(found)
        cursor = found
    assert runs[: len(expected)] == expected, expr
    if len(expected) < 3:  # the oracle gave up after eight years; so must the engine have
        assert len(runs) == len(expected) or runs[len(expected)] > after + 8 * 365 * 86_400_000


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 7 * 86_400_000),
    st.one_of(st.none(), st.integers(0, END)),
    st.integers(START, END),
    st.integers(1, 12),
)
def test_every_runs_are_evenly_spaced_from_the_anchor(
    every: int, anchor: int | None, after: int, count: int
) -> None:
    schedule: dict[str, object] = {"kind": "every", "everyMs": every}
    if anchor is not None:
        schedule["anchorMs"] = anchor
    runs = next_runs(schedule, after_ms=after, count=count, host_tz="UTC")
    grid = after if anchor is None else anchor
    assert len(runs) == count
    assert all(b - a == every for a, b in pairwise(runs))
    assert all((run - grid) % every == 0 for run in runs)
    # The first run is the anchor when it is ahead, else the first grid point at or after
    # "now" but at least one step past the anchor (OpenClaw: a grid point equal to "now"
    # past the first step counts as due now).
    if grid > after:
        assert runs[0] == grid
    else:
        assert runs[0] >= after
        assert runs[0] - every < after or runs[0] == grid + every


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from(["0 * * * *", "0 */2 * * *", "17 * * * *", "*/5 * * * *", "0 9-17 * * *"]),
    st.sampled_from(ZONES),
    st.text(min_size=1, max_size=12),
    st.sampled_from([None, 0, 1, 30_000, 60_000, 300_000]),
    _starts(),
)
def test_staggered_runs_are_base_runs_plus_the_offset(
    expr: str, tz: str, job_id: str, stagger: int | None, after: int
) -> None:
    schedule: dict[str, object] = {"kind": "cron", "expr": expr, "tz": tz}
    if stagger is not None:
        schedule["staggerMs"] = stagger
    offset = stagger_offset_ms(job_id, resolve_stagger_ms(schedule))
    assert 0 <= offset < max(1, resolve_stagger_ms(schedule))
    staggered = next_runs(schedule, after_ms=after, count=4, host_tz="UTC", job_id=job_id)
    base = next_runs(schedule, after_ms=after - offset, count=4, host_tz="UTC")
    assert staggered == [run + offset for run in base]
    assert staggered[0] > after
    assert (
        compute_next_run_ms(schedule, now_ms=after, host_tz="UTC", job_id=job_id) == (staggered[0])
    )
