"""Issue 21: two beats at once (the beat lease, D-K25) run each plan fire time once.

tests/integration/test_two_beats_postgres.py shows one of two beats sending the
periodic jobs and the other taking over when it dies, counting a kernel job's
ticks; it runs no plan. Here two beats and a worker run an every-20s and a
`* * * * *` cron plan, delivered to the suite's receiver; once each plan has run,
the beat holding the lease is killed (kill -9) and the other takes over. Every
fire time between each plan's first and last row has one row (D-C20) and each run
reached the receiver exactly once: neither two beats nor the takeover ran a fire
time twice or lost one.
"""

from __future__ import annotations

import signal
import time
from collections import Counter

from plans.models import Run
from tests.faults.plan_runs import (
    CRON,
    EVERY,
    check_every_fire_time_once,
    confirmed_job,
    figures,
    key,
    ms,
    plans_config,
    quiet,
    route_to,
    rows,
)
from tests.faults.receiver import Receiver
from tests.integration.conftest import CeleryProcesses, clear_broker, wait_for
from tests.integration.test_two_beats_postgres import _holder, _stood_by


def test_two_beats_and_a_takeover_run_each_plan_fire_time_once(
    own_services, workspace, tmp_path, settings, capsys
):
    clear_broker()
    receiver = Receiver(tmp_path, delay=0.05)
    route_to(settings, receiver)
    jobs = {"every 20s": confirmed_job(EVERY), "cron * * * * *": confirmed_job(CRON)}
    processes = CeleryProcesses(tmp_path)
    config = plans_config(receiver, workspace)
    log = tmp_path / "home" / "logs" / "xworkmate.log"

    def ok_runs(after_ms: int = 0) -> dict[str, int]:
        return {name: Run.objects.filter(job=job, status=Run.OK, fire_at_ms__gt=after_ms).count()
                for name, job in jobs.items()}

    try:
        processes.start("worker", config)
        beats = [processes.start("beat", config, name=f"beat-{n}") for n in (1, 2)]
        wait_for(lambda: _holder() is not None, timeout=60, what="a beat's lease")
        holding = next(b for b in beats if f":{b.pid}:" in (_holder() or ""))
        standing = next(b for b in beats if b is not holding)
        wait_for(lambda: _stood_by(log, standing.pid), timeout=60,
                 what="the other beat standing by")
        wait_for(lambda: ok_runs()["cron * * * * *"] >= 1 and ok_runs()["every 20s"] >= 2,
                 timeout=180, what=f"runs of both plans\n{processes.logs()[-4000:]}")
        holding.send_signal(signal.SIGKILL)
        holding.wait(timeout=20)
        killed_ms = ms()
        started = time.monotonic()
        wait_for(lambda: f":{standing.pid}:" in (_holder() or ""), timeout=60,
                 what="the other beat taking over")
        takeover = time.monotonic() - started
        took_over_ms = ms()
        # Both plans run on after the takeover: a cron minute and two every steps.
        wait_for(lambda: ok_runs(killed_ms)["cron * * * * *"] >= 1
                 and ok_runs(killed_ms)["every 20s"] >= 2,
                 timeout=150, what=f"runs after the takeover\n{processes.logs()[-4000:]}")
        assert standing.poll() is None, processes.logs()[-4000:]
        wait_for(lambda: quiet(jobs.values()), timeout=60, what="no run out")
        processes.stop()

        lines = [f"two beats, the lease holder killed: taken over in {takeover:.1f}s"]
        lines += [figures(name, {**Counter(r.status for r in rows(job)),
                                 "after the kill": ok_runs(killed_ms)[name]})
                  for name, job in jobs.items()]
        with capsys.disabled():  # the figures, in the suite's output, before any assertion
            print("\n" + "\n".join(lines))
        counts = receiver.counts()
        for job in jobs.values():
            check_every_fire_time_once(job, receiver)
            found = rows(job)
            assert all(counts[key(job, r.fire_at_ms)] == 1 for r in found
                       if r.status == Run.OK), found
            # Each ran, but for a fire time that fell in the takeover's gap (no beat
            # ticking): the lease (6 s) is shorter than a step, so only a slow takeover
            # could have left one missed (D-C10), never skipped.
            assert all(r.status == Run.OK or (r.status == Run.MISSED
                       and killed_ms - 2_000 <= r.fire_at_ms <= took_over_ms)
                       for r in found), found
    finally:
        processes.stop()
        receiver.stop()
