"""A job's run policies (D-C23, D-C24): what happens to missed and overlapping fire times.

Pure (D-K2, D-K18): callers pass the schedule, the times and the job's choices. The
missed-run policy decides which fire times passed while no tick saw them (the service
was down, D-C10) still run: `run-latest` (the default, D-C10) runs the newest once,
`skip` runs none that is late, `run-all` runs each no later than the maximum lateness,
oldest first, one after the other. The overlap policy decides what a fire time that
comes while the job's previous run is still out gets: `skip` (the default, D-C20) a
skipped row, `buffer` a place to run when the run ends (one at most), `allow` a run
of its own beside it (a bounded number at once). Every fire time that does not run
gets a row saying why: the rules here say which, the services write them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from plans.firetimes import fire_times, schedule_kind

MISSED_RUN_LATEST = "run-latest"
MISSED_SKIP = "skip"
MISSED_RUN_ALL = "run-all"
MISSED_POLICIES = (MISSED_RUN_LATEST, MISSED_SKIP, MISSED_RUN_ALL)

OVERLAP_SKIP = "skip"
OVERLAP_BUFFER = "buffer"
OVERLAP_ALLOW = "allow"
OVERLAP_POLICIES = (OVERLAP_SKIP, OVERLAP_BUFFER, OVERLAP_ALLOW)

# D-C23: a fire time a tick reaches within this is on time. The tick runs every 15 s;
# OpenClaw's own timer wakes at least every 60 s, so a run that late is an ordinary one.
ON_TIME_MS = 60_000
# D-C23: `run-all` catches up at most this many fire times (a day of hourly runs); older
# ones within the lateness get missed rows saying so, so an outage never queues
# hundreds of agent turns.
MAX_CATCH_UP_RUNS = 24
# maxLatenessSeconds: at least the on-time window (a smaller one would miss ordinary
# runs of a late tick), at most 7 days.
MIN_LATENESS_SECONDS = ON_TIME_MS // 1000
MAX_LATENESS_SECONDS = 7 * 86_400
# D-C24: `allow` runs at most this many runs of one job at once; a fire time beyond
# gets a skipped row saying so (an every-second job must not pile up agent turns).
MAX_CONCURRENT_RUNS = 5

MISSED_DOWN = "missed: the scheduler was not running at this fire time"
MISSED_NOT_ON_TIME = (
    "missed: no tick reached this fire time within 60 s and the job's missed-run policy "
    "is skip"
)
MISSED_LATE = (
    "missed: later than the job's maximum lateness ({seconds} s) when the scheduler could "
    "start it"
)
MISSED_OVER_BOUND = (
    f"missed: more than {MAX_CATCH_UP_RUNS} fire times to catch up; only the newest "
    f"{MAX_CATCH_UP_RUNS} within the maximum lateness run"
)
SKIPPED_RUNNING = "skipped: the previous run was still running at this fire time"
SKIPPED_BUFFER_FULL = (
    "skipped: the previous run was still running and an earlier fire time already waits "
    "to run after it (overlap policy buffer keeps one)"
)
SKIPPED_AT_CAPACITY = (
    f"skipped: {MAX_CONCURRENT_RUNS} runs of this job were still running at this fire time "
    f"(overlap policy allow runs at most {MAX_CONCURRENT_RUNS} at once)"
)


def run_policy_problems(
    *, missed: object, max_lateness_seconds: object, overlap: object
) -> list[str]:
    """Why a proposal's run policies are wrong, each naming its field and rule; [] if right."""
    problems: list[str] = []
    if missed not in MISSED_POLICIES:
        problems.append(
            "missed: must be one of "
            + ", ".join(f'"{name}"' for name in MISSED_POLICIES)
            + f" (got {missed!r})"
        )
    if overlap not in OVERLAP_POLICIES:
        problems.append(
            "overlap: must be one of "
            + ", ".join(f'"{name}"' for name in OVERLAP_POLICIES)
            + f" (got {overlap!r})"
        )
    if missed == MISSED_RUN_ALL:
        if max_lateness_seconds is None:
            problems.append(
                'maxLatenessSeconds: required with missed "run-all" (how late a missed fire '
                "time may still run, in seconds)"
            )
        elif (
            isinstance(max_lateness_seconds, bool)
            or not isinstance(max_lateness_seconds, int)
            or not MIN_LATENESS_SECONDS <= max_lateness_seconds <= MAX_LATENESS_SECONDS
        ):
            problems.append(
                f"maxLatenessSeconds: must be a whole number of seconds from "
                f"{MIN_LATENESS_SECONDS} to {MAX_LATENESS_SECONDS} (7 days)"
            )
    elif max_lateness_seconds is not None and missed in MISSED_POLICIES:
        problems.append('maxLatenessSeconds: only with missed "run-all"')
    return problems


@dataclass(frozen=True)
class CatchUp:
    run_ms: int | None  # the fire time to run now, if any
    missed_ms: tuple[int, ...]  # fire times recorded as missed (at most MAX_MISSED_RECORDED)
    missed_more: int  # missed fire times beyond those, counted in the last row
    next_ms: int | None  # the first fire time after now (what the job waits for next)
    missed_note: str = MISSED_DOWN  # why missed_ms did not run
    # run-all: the newest fire time skip found late (skip), or those past the bound.
    late_ms: tuple[int, ...] = ()
    late_note: str = ""
    waiting_ms: tuple[int, ...] = ()  # run-all: to run after run_ms, one by one, in order


def catch_up(
    schedule: Mapping[str, object],
    *,
    due_ms: int,
    now_ms: int,
    host_tz: str,
    job_id: str,
    policy: str,
    max_lateness_seconds: int | None = None,
) -> CatchUp:
    """What a tick does with a job due since `due_ms` (D-C10, D-C23).

    No fire time is skipped silently. `run-latest`: the newest runs once however
    late, the older ones are missed. `skip`: the newest runs only if the tick reached
    it on time (ON_TIME_MS), every other one is missed. `run-all`: every fire time no
    older than the maximum lateness runs, oldest first (the first now, the rest
    waiting), at most MAX_CATCH_UP_RUNS; the older ones are missed as too late. A
    one-shot has a single fire time, which runs once however late (D-C10).
    """
    if schedule_kind(schedule) == "at":
        return CatchUp(due_ms, (), 0, None)
    span = fire_times(schedule, due_ms=due_ms, to_ms=max(now_ms, due_ms), host_tz=host_tz,
                      job_id=job_id)
    passed = span.times
    if policy == MISSED_SKIP:
        newest = passed[-1]
        if now_ms - newest <= ON_TIME_MS:
            return CatchUp(newest, passed[:-1], span.more, span.next_ms)
        return CatchUp(None, passed[:-1], span.more, span.next_ms,
                       late_ms=(newest,), late_note=MISSED_NOT_ON_TIME)
    if policy == MISSED_RUN_ALL and max_lateness_seconds is not None:
        limit_ms = max_lateness_seconds * 1000
        within = [ms for ms in passed if now_ms - ms <= limit_ms]
        too_late = tuple(ms for ms in passed if now_ms - ms > limit_ms)
        over = tuple(within[:-MAX_CATCH_UP_RUNS])
        runs = within[-MAX_CATCH_UP_RUNS:]
        return CatchUp(
            runs[0] if runs else None,
            too_late,
            span.more,
            span.next_ms,
            missed_note=MISSED_LATE.format(seconds=max_lateness_seconds),
            late_ms=over,
            late_note=MISSED_OVER_BOUND,
            waiting_ms=tuple(runs[1:]),
        )
    return CatchUp(passed[-1], passed[:-1], span.more, span.next_ms)


@dataclass(frozen=True)
class NextWaiting:
    run_ms: int | None  # the waiting fire time to start now, if any
    late_ms: tuple[int, ...]  # waiting fire times now later than the maximum lateness
    waiting_ms: tuple[int, ...]  # those still waiting after it


def next_waiting(
    waiting_ms: Sequence[int], *, now_ms: int, max_lateness_seconds: int | None
) -> NextWaiting:
    """The oldest waiting catch-up fire time still within the maximum lateness (D-C23):
    lateness counts when the run can start, so a long run before it can make the
    ones behind it too late; those are missed, never run late."""
    late: list[int] = []
    for index, fire_at_ms in enumerate(waiting_ms):
        if max_lateness_seconds is None or now_ms - fire_at_ms <= max_lateness_seconds * 1000:
            return NextWaiting(fire_at_ms, tuple(late), tuple(waiting_ms[index + 1 :]))
        late.append(fire_at_ms)
    return NextWaiting(None, tuple(late), ())


@dataclass(frozen=True)
class Overlap:
    buffer_ms: int | None  # the fire time to run when the running run ends (buffer)
    skipped_ms: tuple[int, ...]  # fire times recorded as skipped, with `note`
    note: str


def overlap_decision(
    policy: str, *, arriving_ms: Sequence[int], buffered_ms: int | None, at_capacity: bool
) -> Overlap:
    """What fire times that came while the job's run was out get (D-C20, D-C24).

    `skip`: a skipped row each. `buffer`: the first is kept to run when the run ends,
    unless one is kept already; the others are skipped saying so. `allow` starts a
    run beside the others (the tick does), so here only when MAX_CONCURRENT_RUNS are
    out already: skipped saying so.
    """
    times = tuple(arriving_ms)
    if policy == OVERLAP_BUFFER:
        if buffered_ms is None and times:
            return Overlap(times[0], times[1:], SKIPPED_BUFFER_FULL)
        return Overlap(None, times, SKIPPED_BUFFER_FULL)
    if policy == OVERLAP_ALLOW and at_capacity:
        return Overlap(None, times, SKIPPED_AT_CAPACITY)
    return Overlap(None, times, SKIPPED_RUNNING)
