"""Issue 21: kill -9 the worker while plan runs are being delivered (D-K30, D-C20).

Four every-5s plans run with a real worker and beat; their messages go to a
receiver that takes 2 s per request, so a run's send is under way most of the
time. While one is, the whole worker (main process and pool children) is killed
with SIGKILL, left down past two fire times of each plan (beat goes on ticking
into the broker) and started again. Then, once beat is stopped and the runs out
have ended: no run is left `running`; every fire time between a plan's first and
last row has a row (D-C20), those that passed during the outage included; each run
that ran reached the receiver, twice only if its send had begun before the kill,
and always under its own Idempotency-Key. (Fire times that pass before the first
worker's first tick are `missed`, D-C10: the plans are confirmed before it starts.)
"""

from __future__ import annotations

import signal
import time
from collections import Counter

from plans.models import Run
from tests.faults.kill import kill_9
from tests.faults.plan_runs import (
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
from tests.integration.test_plans_real import PURPOSE
from xworkmate.delivery.models import Attempt, Message

PLANS = 4
STEP_MS = 5_000


def _begun_unanswered() -> set[int]:
    """Plan-run messages whose send began and has no answer (D-K30: marked `unknown`)."""
    return set(Attempt.objects.filter(finished_at__isnull=True, message__purpose=PURPOSE)
               .values_list("message_id", flat=True))


def test_kill_9_the_worker_during_plan_runs_delivery_records_and_delivers_every_fire_time(
    own_services, workspace, tmp_path, settings, capsys
):
    clear_broker()
    receiver = Receiver(tmp_path, delay=2.0)
    route_to(settings, receiver)
    jobs = [confirmed_job({"kind": "every", "everyMs": STEP_MS}) for _ in range(PLANS)]
    processes = CeleryProcesses(tmp_path)
    config = plans_config(receiver, workspace)
    try:
        worker = processes.start("worker", config, name="worker-1")
        beat = processes.start("beat", config)
        wait_for(lambda: Run.objects.filter(job__in=jobs, status=Run.OK).count() >= PLANS,
                 timeout=120, what=f"the first runs\n{processes.logs()[-4000:]}")
        wait_for(_begun_unanswered, timeout=60, what="a plan run's send under way")
        kill_9(worker, "whole worker")
        killed_ms = ms()
        time.sleep(0.5)  # what was on the wire lands (or not) at the receiver
        begun = _begun_unanswered()
        running_at_kill = Run.objects.filter(job__in=jobs, status=Run.RUNNING).count()
        # Down past two fire times of each plan; beat still ticks into the broker.
        wait_for(lambda: ms() > killed_ms + 2 * STEP_MS + 1_000, timeout=30, what="the outage")
        restarted_ms = ms()
        processes.start("worker", config, name="worker-2")
        wait_for(lambda: all(Run.objects.filter(job=j, status=Run.OK,
                                                fire_at_ms__gt=restarted_ms).exists()
                             for j in jobs),
                 timeout=120, what=f"runs after the restart\n{processes.logs()[-4000:]}")
        recovery = (ms() - restarted_ms) / 1000
        beat.send_signal(signal.SIGTERM)  # no new runs; the worker ends those out
        beat.wait(timeout=30)
        wait_for(lambda: quiet(jobs), timeout=120,
                 what=f"every run ended\n{processes.logs()[-4000:]}")
        processes.stop()

        counts = receiver.counts()
        messages = dict(Message.objects.filter(purpose=PURPOSE).values_list("pk", "status"))
        keys = {r.message_id: key(job, r.fire_at_ms) for job in jobs for r in rows(job)
                if r.message_id is not None}
        doubled = {pk for pk, sent_as in keys.items() if counts[sent_as] > 1}
        by_status: Counter[str] = Counter()
        outage = 0
        for job in jobs:
            found = rows(job)
            by_status.update(r.status for r in found)
            outage += sum(killed_ms < r.fire_at_ms < restarted_ms for r in found)
        lines = [figures(f"kill -9 the worker during {PLANS} every-5s plans' deliveries", {
            "runs out at the kill": running_at_kill, "sends begun, unanswered": len(begun),
            **by_status, "fire times in the outage": outage,
            "doubled": len(doubled), "recovery s": int(recovery),
        })]
        with capsys.disabled():  # the figures, in the suite's output, before any assertion
            print("\n" + "\n".join(lines))

        assert not Run.objects.filter(job__in=jobs, status=Run.RUNNING).exists()
        assert set(messages.values()) == {"sent"}, messages  # each run's message delivered
        # A second arrival only for a send begun before the kill (same key: the checks).
        assert doubled <= begun, sorted(doubled - begun)
        for job in jobs:
            check_every_fire_time_once(job, receiver)
            found = rows(job)
            assert all(counts[key(job, r.fire_at_ms)] >= 1 for r in found
                       if r.status == Run.OK), found
            # The outage's fire times have their rows too (D-C20: skipped while the
            # killed run was out, or run).
            assert sum(killed_ms < r.fire_at_ms < restarted_ms for r in found) >= 2, found
    finally:
        processes.stop()
        receiver.stop()
