"""/healthz: database, broker and periodic jobs; 503 when something is down."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from xworkmate.config import PeriodicJob
from xworkmate.models import PeriodicJobState
from xworkmate.periodic import job_health

EVERY_30S = PeriodicJob("liveness", "xworkmate.liveness", timedelta(seconds=30), None, True)
T0 = datetime(2026, 3, 8, 6, 0, tzinfo=UTC)


def test_a_job_is_ok_until_two_intervals_pass_after_its_last_tick():
    health = job_health(EVERY_30S, beat_seen_at=None, last_tick_at=T0, last_status="ok",
                        now=T0 + timedelta(seconds=60))
    assert health.status == "ok" and health.due_by == T0 + timedelta(seconds=60)
    stale = job_health(EVERY_30S, beat_seen_at=None, last_tick_at=T0, last_status="ok",
                       now=T0 + timedelta(seconds=60, microseconds=1))
    assert stale.status == "stale" and stale.is_down


def test_a_job_never_ticked_is_pending_after_beat_start_then_stale():
    kwargs = {"beat_seen_at": T0, "last_tick_at": None, "last_status": ""}
    assert job_health(EVERY_30S, now=T0 + timedelta(seconds=59), **kwargs).status == "pending"
    assert job_health(EVERY_30S, now=T0 + timedelta(seconds=61), **kwargs).status == "stale"


def test_a_job_beat_never_scheduled_is_down():
    health = job_health(EVERY_30S, beat_seen_at=None, last_tick_at=None, last_status="", now=T0)
    assert health.status == "unscheduled" and health.is_down


def test_a_failing_job_is_reported_but_not_down():
    health = job_health(EVERY_30S, beat_seen_at=T0, last_tick_at=T0, last_status="error", now=T0)
    assert health.status == "failing" and not health.is_down


def test_a_disabled_job_is_never_down():
    job = PeriodicJob("off", "xworkmate.liveness", timedelta(seconds=1), None, False)
    assert job_health(job, beat_seen_at=None, last_tick_at=None, last_status="", now=T0).status == "disabled"


@pytest.mark.parametrize(
    ("cron", "last", "due_by"),
    [
        # hourly at :15 -> next two fires after 05:20 UTC are 06:15 and 07:15 (Shanghai = UTC+8,
        # minutes unaffected by the zone)
        ("15 * * * *", datetime(2026, 3, 8, 5, 20, tzinfo=UTC), datetime(2026, 3, 8, 7, 15, tzinfo=UTC)),
        ("*/5 * * * *", datetime(2026, 3, 8, 5, 0, tzinfo=UTC), datetime(2026, 3, 8, 5, 10, tzinfo=UTC)),
    ],
)
def test_a_cron_job_is_stale_after_two_missed_fires(cron, last, due_by, settings):
    job = PeriodicJob("c", "xworkmate.liveness", None, cron, True)
    health = job_health(job, beat_seen_at=None, last_tick_at=last, last_status="ok", now=last)
    assert health.due_by == due_by


def _seen(**fields):
    """Beat has scheduled every enabled job; `fields` describe liveness's ticks."""
    from xworkmate.periodic import configured_jobs

    for job in configured_jobs():
        if job.enabled and job.name != "liveness":
            PeriodicJobState.objects.create(
                name=job.name, task=job.task, beat_seen_at=timezone.now(),
                last_tick_at=timezone.now(), last_status="ok",
            )
    defaults = {"task": "xworkmate.liveness", "beat_seen_at": timezone.now()}
    return PeriodicJobState.objects.create(name="liveness", **(defaults | fields))


def test_it_answers_200_when_everything_is_up(client, db):
    _seen(last_tick_at=timezone.now(), last_status="ok", runs=4)
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["database"]["status"] == "ok" and body["database"]["vendor"] in ("sqlite", "postgresql")
    assert body["broker"]["status"] == "ok"
    job = body["periodic_jobs"]["liveness"]
    assert job["status"] == "ok" and job["runs"] == 4 and job["schedule"] == "every 30s"
    assert response["Cache-Control"].startswith("max-age=0")


def test_it_answers_503_when_a_job_is_stale(client, db):
    long_ago = timezone.now() - timedelta(minutes=5)
    _seen(beat_seen_at=long_ago, last_tick_at=long_ago, last_status="ok")
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["periodic_jobs"]["liveness"]["status"] == "stale"
    assert response.json()["status"] == "down"


def test_it_answers_503_when_beat_never_ran(client, db):
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["periodic_jobs"]["liveness"]["status"] == "unscheduled"


def test_it_answers_503_when_the_broker_is_down(client, db, settings):
    _seen()
    # A real connection attempt to a closed port, not a mock.
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {}
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["broker"] == {
        "status": "down", "transport": "redis", "error": "OperationalError",
    }
    assert "127.0.0.1:1" not in response.content.decode()  # no URLs leak


def test_it_refuses_other_methods(client, db):
    assert client.post("/healthz").status_code == 405
