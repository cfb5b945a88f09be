"""Confirmed plans run by real worker and beat processes, for the fault suite (issue 21).

Each run's agentTurn goes through the outbox to the suite's receiver
(tests/faults/receiver.py, a webhook in a process of its own), so what arrived
there is what the service delivered, whatever a test kills. The checks read
each job's run rows against its schedule's own grid (plans/firetimes.py): every
fire time between a job's first and last row has exactly one row (D-C20), and
each run's message reached the receiver under the run's Idempotency-Key.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.utils import timezone

from plans.firetimes import fire_times
from plans.models import Job, Run
from plans.services._common import _host_tz
from tests.faults.receiver import Receiver
from tests.integration.test_plans_real import PURPOSE, _confirm, _propose

# The every-plan: config allows down to plans.min_every (1 s), so 20 s stands in for a
# minute; the cron plan is minute-granular and needs real minutes.
EVERY_MS = 20_000
EVERY = {"kind": "every", "everyMs": EVERY_MS}
CRON = {"kind": "cron", "expr": "* * * * *", "tz": "UTC"}


def plans_config(receiver: Receiver, workspace: Path, *, beat_lease: str = "6s") -> str:
    """The worker's and beat's config: plan runs to the receiver, ticks every second."""
    return f"""
[service]
beat_lease = "{beat_lease}"

[plans]
workspace = "{workspace}"

[delivery]
dispatch_grace = "2s"

[longrun]
# A send begun without an answer is sent again soon (the webhook de-duplicates).
unknown_cooldown = "6s"

{receiver.channel_toml([PURPOSE], read_timeout="10s")}
[[periodic_jobs]]
name = "plans-tick"
every = "1s"

[[periodic_jobs]]
name = "plans-reconcile"
enabled = false

[[periodic_jobs]]
name = "delivery-dispatch"
every = "1s"
"""


def route_to(settings: Any, receiver: Receiver) -> None:
    """This process routes plan runs as the worker's config does (a forced run, if any)."""
    receiver.route_here(settings, [PURPOSE])


def confirmed_job(schedule: dict[str, Any]) -> Job:
    return _confirm(_propose(dict(schedule)))


def ms(moment: Any = None) -> int:
    return int((moment or timezone.now()).timestamp() * 1000)


@dataclass(frozen=True)
class Row:
    fire_at_ms: int
    status: str
    run_at_ms: int | None
    message_id: int | None
    error: str


def rows(job: Job) -> list[Row]:
    return [
        Row(r.fire_at_ms, r.status, r.run_at_ms, r.delivery_message_id, r.error)
        for r in Run.objects.filter(job=job).order_by("fire_at_ms")
    ]


def grid(job: Job, first_ms: int, last_ms: int) -> list[int]:
    """The job's fire times from `first_ms` (one of them) through `last_ms`."""
    job.refresh_from_db()
    span = fire_times(job.schedule, due_ms=first_ms, to_ms=last_ms, host_tz=_host_tz(),
                      job_id=job.job_id)
    assert span.more == 0, "a span too long for these checks"
    return list(span.times)


def key(job: Job, fire_at_ms: int) -> str:
    # One idempotency key per (job, fire time), as the run row (_start_run).
    return f"{job.job_id}:{fire_at_ms}"


def quiet(jobs: Iterable[Job]) -> bool:
    """No run of these jobs is out: a moment to stop the service without one in flight."""
    return not Run.objects.filter(job__in=list(jobs), status=Run.RUNNING).exists()


def check_every_fire_time_once(job: Job, receiver: Receiver) -> dict[str, int]:
    """Every fire time between the job's first and last row has exactly one row; each run
    row that ran reached the receiver under its own key, the others never did. Returns the
    rows counted by status and the arrivals, for the test's figures."""
    found = rows(job)
    assert found, f"no row for {job.job_id}"
    stamps = [r.fire_at_ms for r in found]
    assert len(stamps) == len(set(stamps)), "a fire time with two rows"
    expected = grid(job, stamps[0], stamps[-1])
    assert stamps == expected, {
        "without a row": sorted(set(expected) - set(stamps)),
        "off the grid": sorted(set(stamps) - set(expected)),
    }
    counts = receiver.counts()
    for row in found:
        arrived = counts[key(job, row.fire_at_ms)]
        if row.status in (Run.OK, Run.RUNNING):
            assert row.message_id is not None
        if row.status == Run.OK:
            assert arrived >= 1, f"run {row} never reached the receiver"
        elif row.status in (Run.MISSED, Run.SKIPPED):
            assert arrived == 0 and row.message_id is None, row
    for request in receiver.requests():
        assert request["header"] == request["key"]  # the Idempotency-Key is the run's
    by_status = Counter(r.status for r in found)
    arrivals = sum(counts[key(job, s)] for s in stamps)
    return {**by_status, "fire times": len(found), "arrivals": arrivals}


def figures(name: str, numbers: dict[str, int]) -> str:
    return f"{name}: " + ", ".join(f"{k} {v}" for k, v in numbers.items())
