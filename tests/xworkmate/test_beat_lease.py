"""D-K25: one beat sends the periodic jobs; another stands by and takes over when the lease expires."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from celery.beat import Scheduler

from xworkmate.celery import app as celery_app
from xworkmate.models import BeatLease
from xworkmate.periodic import ConfiguredScheduler
from xworkmate.services import beat_lease_hold

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)
PERIOD = timedelta(seconds=30)


def test_the_first_beat_takes_the_lease_and_a_second_waits_while_it_is_renewed():
    assert beat_lease_hold(holder="a", now=T0, period=PERIOD)
    assert not beat_lease_hold(holder="b", now=T0 + timedelta(seconds=1), period=PERIOD)
    # a renews every third of the period; b never gets it meanwhile.
    for second in (10, 20, 30, 40):
        at = T0 + timedelta(seconds=second)
        assert beat_lease_hold(holder="a", now=at, period=PERIOD)
        assert not beat_lease_hold(holder="b", now=at, period=PERIOD)
    assert BeatLease.objects.get().holder == "a"


def test_a_dead_holder_is_replaced_once_its_lease_expires():
    assert beat_lease_hold(holder="a", now=T0, period=PERIOD)
    assert not beat_lease_hold(holder="b", now=T0 + timedelta(seconds=29), period=PERIOD)
    assert beat_lease_hold(holder="b", now=T0 + timedelta(seconds=30), period=PERIOD)
    # a comes back (it was only paused): the lease is b's now.
    assert not beat_lease_hold(holder="a", now=T0 + timedelta(seconds=31), period=PERIOD)
    lease = BeatLease.objects.get()
    assert (lease.holder, lease.acquired_at) == ("b", T0 + timedelta(seconds=30))


def _scheduler(tmp_path: Path, name: str) -> ConfiguredScheduler:
    return ConfiguredScheduler(app=celery_app, schedule_filename=str(tmp_path / name), lazy=False)


def test_only_the_holder_sends_the_due_jobs(tmp_path: Path, monkeypatch: Any):
    sent: list[str] = []

    def fake_tick(self: Scheduler, *args: Any, **kwargs: Any) -> float:
        sent.append(self._holder)  # type: ignore[attr-defined]
        return 300.0

    monkeypatch.setattr(Scheduler, "tick", fake_tick)
    # Beat recycles its connection each tick; the test's lives in its transaction.
    monkeypatch.setattr("django.db.close_old_connections", lambda: None)
    first, second = _scheduler(tmp_path, "one"), _scheduler(tmp_path, "two")
    try:
        # Both wake again within a third of the lease, whatever the schedule says.
        assert first.tick() == 10.0
        assert second.tick() == 10.0
        assert first.tick() == 10.0
    finally:
        first.close()
        second.close()
    assert sent == [first._holder, first._holder]
    assert BeatLease.objects.get().holder == first._holder


def test_healthz_shows_who_holds_the_lease(client):
    assert "beat_lease" not in client.get("/healthz").json()
    beat_lease_hold(holder="host:1:ab", now=T0, period=PERIOD)
    assert client.get("/healthz").json()["beat_lease"] == {
        "holder": "host:1:ab", "expires_at": (T0 + PERIOD).isoformat(),
    }
