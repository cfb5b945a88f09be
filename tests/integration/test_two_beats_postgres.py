"""D-K25: two real beats on PostgreSQL: one sends the jobs, the other takes over when it dies."""

from __future__ import annotations

import signal
import time
from pathlib import Path

from tests.integration.conftest import wait_for
from xworkmate.models import BeatLease, PeriodicJobState

CONFIG = """
[service]
beat_lease = "6s"

[[periodic_jobs]]
name = "liveness"
every = "1s"
"""


def _runs() -> int:
    state = PeriodicJobState.objects.filter(name="liveness").first()
    return 0 if state is None else int(state.runs)


def _stood_by(log: Path, pid: int) -> bool:
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    return any("stands by" in line and f":{pid}:" in line for line in lines)


def _holder() -> str | None:
    lease = BeatLease.objects.filter(name="beat").first()
    return None if lease is None else lease.holder


def test_one_of_two_beats_sends_and_the_other_takes_over(celery_processes):
    celery_processes.start("worker", CONFIG)
    first = celery_processes.start("beat", CONFIG, name="beat-one")
    wait_for(lambda: _holder() is not None, timeout=60, what="the first beat's lease")
    held_by = _holder()
    assert held_by is not None and f":{first.pid}:" in held_by
    second = celery_processes.start("beat", CONFIG, name="beat-two")
    # The service's log (the data home's logs/xworkmate.log) says so, naming it.
    log = celery_processes.tmp_path / "home" / "logs" / "xworkmate.log"
    wait_for(lambda: _stood_by(log, second.pid), timeout=60, what="the second beat standing by")
    wait_for(lambda: _runs() > 0, timeout=60, what="the first liveness runs")
    # Over 8 intervals of 1 s, one beat sends about 8 ticks; two would send about 16.
    before = _runs()
    time.sleep(8)
    sent = _runs() - before
    assert 4 <= sent <= 10, celery_processes.logs()
    assert _holder() == held_by

    first.send_signal(signal.SIGKILL)
    first.wait(timeout=20)
    # The lease (6 s) expires and the second beat takes it within a few of its wake-ups.
    wait_for(
        lambda: (_holder() or "").find(f":{second.pid}:") >= 0, timeout=30,
        what="the second beat taking over",
    )
    after = _runs()
    wait_for(lambda: _runs() >= after + 3, timeout=30, what="ticks from the second beat")
    assert second.poll() is None, celery_processes.logs()
