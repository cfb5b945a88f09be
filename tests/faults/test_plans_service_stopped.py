"""Issue 21: the whole service stopped across three fire times of two confirmed plans.

An every-20s plan (20 s stands in for a minute: plans.min_every allows it) and a
`* * * * *` cron plan run with a real worker and beat on the suite's own PostgreSQL
and Redis, their runs delivered through the outbox to the suite's receiver. Once
each has run, worker and beat are stopped (no run out), left down past three fire
times of each, and started again. Then, per plan: the fire times passed while down
got their rows by the catch-up policy (D-C10, `run-latest`: the newest that had
passed runs once, the older ones are `missed`), every fire time has one row (D-C20),
each run reached the receiver once and a missed fire time never.
"""

from __future__ import annotations

from collections import Counter

from plans.models import Job, Run
from tests.faults.plan_runs import (
    CRON,
    EVERY,
    Row,
    check_every_fire_time_once,
    confirmed_job,
    figures,
    grid,
    key,
    ms,
    plans_config,
    quiet,
    route_to,
    rows,
)
from tests.faults.receiver import Receiver
from tests.integration.conftest import CeleryProcesses, clear_broker, wait_for

FIRE_TIMES_DOWN = 3


def _start(processes: CeleryProcesses, config: str) -> None:
    processes.start("worker", config)
    processes.start("beat", config)


def _catch_up_run(job: Job, first_down_ms: int) -> Row | None:
    """The first row from the downtime on that is not `missed`: the catch-up's run."""
    return next((r for r in rows(job) if r.fire_at_ms >= first_down_ms
                 and r.status != Run.MISSED), None)


def _caught_up(job: Job, first_down_ms: int) -> bool:
    run = _catch_up_run(job, first_down_ms)
    return run is not None and run.status == Run.OK


def _summary(job: Job, first_down_ms: int, restarted_ms: int) -> dict[str, int]:
    found = rows(job)
    run = _catch_up_run(job, first_down_ms)
    late = (run.run_at_ms or 0) - run.fire_at_ms if run else -1
    return {
        **Counter(r.status for r in found),
        "down": sum(first_down_ms <= r.fire_at_ms < restarted_ms for r in found),
        "catch-up started late by s": late // 1000,
    }


def test_the_service_stopped_across_three_fire_times_catches_up_by_its_policy(
    own_services, workspace, tmp_path, settings, capsys
):
    clear_broker()
    receiver = Receiver(tmp_path, delay=0.05)
    route_to(settings, receiver)
    jobs = {"every 20s": confirmed_job(EVERY), "cron * * * * *": confirmed_job(CRON)}
    assert {job.missed for job in jobs.values()} == {"run-latest"}  # D-C10's default
    processes = CeleryProcesses(tmp_path)
    config = plans_config(receiver, workspace)
    try:
        _start(processes, config)
        wait_for(lambda: all(Run.objects.filter(job=j, status=Run.OK).exists()
                             for j in jobs.values()),
                 timeout=180, what=f"a run of each plan\n{processes.logs()[-4000:]}")
        # Stopped with no run out, so the fire times while down are the scheduler's
        # absence (missed), not a run still going (skipped, D-C20).
        wait_for(lambda: quiet(jobs.values()), timeout=60, what="no run out")
        processes.stop()
        processes.procs.clear()
        stopped_ms = ms()
        first_down: dict[str, int] = {}
        last_down = 0
        for name, job in jobs.items():
            job.refresh_from_db()
            assert job.next_run_at is not None and job.running_at_ms is None
            first_down[name] = ms(job.next_run_at)
            # A cron minute holds one fire time; an every-20s one three.
            ahead = grid(job, first_down[name], first_down[name] + FIRE_TIMES_DOWN * 60_000)
            last_down = max(last_down, ahead[FIRE_TIMES_DOWN - 1])
        wait_for(lambda: ms() > last_down + 2_000, timeout=FIRE_TIMES_DOWN * 60 + 30,
                 what="three fire times of each plan to pass")
        restarted_ms = ms()
        _start(processes, config)
        wait_for(lambda: all(_caught_up(j, first_down[n]) for n, j in jobs.items()),
                 timeout=120, what=f"each plan's catch-up run\n{processes.logs()[-4000:]}")
        recovery = (ms() - restarted_ms) / 1000
        every = jobs["every 20s"]
        # And the schedule goes on after the catch-up: a run of the next fire time.
        caught = _catch_up_run(every, first_down["every 20s"])
        assert caught is not None
        wait_for(lambda: Run.objects.filter(job=every, status=Run.OK,
                                            fire_at_ms__gt=caught.fire_at_ms).exists(),
                 timeout=90, what="the every plan's next run")
        wait_for(lambda: quiet(jobs.values()), timeout=60, what="no run out")
        processes.stop()

        lines = [f"service down {(restarted_ms - stopped_ms) / 1000:.0f}s, "
                 f"catch-up runs delivered {recovery:.1f}s after the start"]
        lines += [figures(name, _summary(job, first_down[name], restarted_ms))
                  for name, job in jobs.items()]
        with capsys.disabled():  # the figures, in the suite's output, before any assertion
            print("\n" + "\n".join(lines))

        counts = receiver.counts()
        for name, job in jobs.items():
            check_every_fire_time_once(job, receiver)
            found = rows(job)
            # No fire time ran twice: each run's message arrived exactly once.
            assert all(counts[key(job, r.fire_at_ms)] == 1 for r in found
                       if r.status == Run.OK), found
            down = [r for r in found if first_down[name] <= r.fire_at_ms < restarted_ms]
            assert len(down) >= FIRE_TIMES_DOWN, found
            run = _catch_up_run(job, first_down[name])
            assert run is not None and run.run_at_ms is not None
            missed = [r for r in found if first_down[name] <= r.fire_at_ms < run.fire_at_ms]
            # run-latest: the older fire times are missed, saying why ...
            assert len(missed) >= FIRE_TIMES_DOWN - 1, found
            assert all(r.status == Run.MISSED and r.error.startswith("missed: the scheduler")
                       for r in missed), found
            # ... and the one that ran was the newest that had passed when it started.
            assert grid(job, run.fire_at_ms, run.run_at_ms) == [run.fire_at_ms]
            # Every other row ran: before the stop and after the catch-up, nothing missed.
            assert all(r.status == Run.OK for r in found if r not in missed), found
    finally:
        processes.stop()
        receiver.stop()
