"""The escalation ladder (D-B30): nudge → resume → recover → a person told, each on the task's page.

The monitors run at the contract's controlled clock (T0 plus minutes, `now`
passed in); the person's message goes through the outbox to the channel
`[delivery.routes]` gives `longrun.escalation`, here a real local webhook.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.test import Client

from longrun import services
from longrun.models import LadderStep, LongTask
from longrun.policies.ladder import (
    BLOCKED_BY_MISSES,
    NUDGE,
    RECOVER,
    RESUME,
    TELL,
    Episode,
    next_steps,
)
from tests.conftest import configure
from tests.delivery.conftest import Receiver, use_channels
from tests.longrun.conftest import K, answer, at, task_set
from xworkmate.config import DeliveryChannel
from xworkmate.delivery.models import Message
from xworkmate.delivery.tasks import deliver

ESCALATION = "longrun.escalation"


def _rungs(name: str = "A") -> list[tuple[str, str]]:
    task = LongTask.objects.get(name=name)
    return [(s.rung, s.reason) for s in LadderStep.objects.filter(task=task).order_by("at", "id")]


def _told() -> list[Message]:
    return list(Message.objects.filter(purpose=ESCALATION).order_by("id"))


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver()
    yield running
    running.close()


@pytest.fixture
def ops(db, settings, receiver: Receiver) -> Receiver:
    """Heartbeats to a webhook nobody answers for (the tests answer), the person's messages
    to the `ops` receiver."""
    use_channels(
        settings,
        DeliveryChannel(name="hook", kind="webhook", url="http://127.0.0.1:9/hook"),
        DeliveryChannel(name="ops", kind="webhook", url=receiver.url),
        routes={"longrun.progress": "hook", ESCALATION: "ops"},
    )
    return receiver


# --- the pure rule ---------------------------------------------------------------------------


def test_each_monitor_rung_is_recorded_and_tells_nobody_by_itself():
    quiet = Episode(recoveries=0, told=False)
    for rung in (NUDGE, RESUME, RECOVER):
        steps = next_steps(rung, "why", quiet, misses=0, recoveries_before_telling=3)
        assert [(s.rung, s.reason) for s in steps] == [(rung, "why")]


def test_the_third_recovery_in_an_episode_tells_a_person_once():
    second = Episode(recoveries=2, told=False)
    steps = next_steps(RECOVER, "stale_update (10m)", second, misses=0, recoveries_before_telling=3)
    assert [s.rung for s in steps] == [RECOVER, TELL]
    assert steps[1].reason == (
        "recovered 3 times without visible progress in between (last: stale_update (10m))"
    )
    told = Episode(recoveries=3, told=True)
    assert [s.rung for s in next_steps(RECOVER, "x", told, misses=0, recoveries_before_telling=3)] == [RECOVER]
    # Nudges and resumes never count as recoveries.
    assert [s.rung for s in next_steps(NUDGE, "x", second, misses=0, recoveries_before_telling=3)] == [NUDGE]


def test_blocked_by_undelivered_heartbeats_tells_a_person_unless_already_told():
    steps = next_steps(BLOCKED_BY_MISSES, "连续 3 次…", Episode(0, False), misses=3, recoveries_before_telling=3)
    assert [(s.rung, s.reason) for s in steps] == [
        (TELL, "blocked after 3 undelivered heartbeats in a row: 连续 3 次…")
    ]
    assert next_steps(BLOCKED_BY_MISSES, "x", Episode(0, True), misses=3, recoveries_before_telling=3) == ()


# --- through the monitors -------------------------------------------------------------------


def test_nudge_resume_recover_then_a_person_told_after_three_recoveries(ops, settings):
    configure(settings, "longrun", auto_resume=True)
    task_set(next_check="等CI")  # registered at T0, visible progress at T0
    services.heartbeat_run_once(now=at(minutes=3))  # progress due: the heartbeat
    answer("sent", "HTTP 200", now=at(minutes=3, seconds=2))  # it arrived: visible progress
    services.keepalive_run_once(now=at(minutes=5))  # idle since then: the resume
    for minutes in (13, 23, 33):  # stale each time: one recovery per stale window
        services.watchdog_run_once(now=at(minutes=minutes))
    assert [rung for rung, _ in _rungs()] == [NUDGE, RESUME, RECOVER, RECOVER, RECOVER, TELL]
    reasons = dict(_rungs())
    assert reasons[NUDGE] == "progress_due (3m)"
    assert reasons[RESUME].startswith("idle_timeout (idle 118s") and reasons[RESUME].endswith("queued")
    assert reasons[TELL] == (
        "recovered 3 times without visible progress in between (last: stale_update (10m))"
    )

    # The person's message goes to the configured route's channel, and arrives there.
    (told,) = _told()
    assert (told.channel, told.target) == ("ops", K)
    assert told.body.startswith("长任务需要人工介入：A\n原因：recovered 3 times")
    assert "最近一次可见进度：2026-04-02T12:03:02+08:00" in told.body
    deliver(told.pk)
    assert [r["json"]["purpose"] for r in ops.requests] == [ESCALATION]
    assert ops.requests[0]["json"]["message"] == told.body

    # A fourth recovery in the same episode: recorded, nobody told again.
    services.watchdog_run_once(now=at(minutes=43))
    assert [rung for rung, _ in _rungs()][-2:] == [TELL, RECOVER] and len(_told()) == 1

    # Visible progress starts a new episode: three more recoveries tell again, once.
    services.task_progress_record(name="A", outcome="touch", by="agent", now=at(minutes=44))
    for minutes in (55, 65, 75):
        services.watchdog_run_once(now=at(minutes=minutes))
    assert [rung for rung, _ in _rungs()][-4:] == [RECOVER, RECOVER, RECOVER, TELL]
    assert len(_told()) == 2 and _told()[1].idempotency_key != _told()[0].idempotency_key


def test_a_resume_planned_at_every_run_of_one_idle_spell_is_one_rung(db):
    task_set(next_check="等CI")  # longrun.auto_resume off: resumes are only planned
    for seconds in (61, 121, 181):
        services.keepalive_run_once(now=at(seconds=seconds))
    assert [(rung, reason.rsplit("; ", 1)[1]) for rung, reason in _rungs()] == [(RESUME, "planned")]
    services.task_progress_record(name="A", outcome="touch", by="agent", now=at(seconds=200))
    services.keepalive_run_once(now=at(seconds=262))  # a new idle spell
    assert [rung for rung, _ in _rungs()] == [RESUME, RESUME]


def test_a_task_blocked_after_three_undelivered_heartbeats_tells_a_person(ops):
    task_set()
    services.heartbeat_run_once(now=at(minutes=3))
    answer("failed", "HTTP 502", now=at(minutes=3, seconds=5))
    answer("failed", "HTTP 502", now=at(minutes=3, seconds=40), retry=True)
    assert _told() == []
    answer("unknown", "read timeout", now=at(minutes=4, seconds=45), retry=True)
    assert LongTask.objects.get(name="A").state == "blocked"
    assert [rung for rung, _ in _rungs()] == [NUDGE, TELL]
    (told,) = _told()
    assert told.channel == "ops"
    assert "原因：blocked after 3 undelivered heartbeats in a row: 连续 3 次进度未送达" in told.body
    step = LadderStep.objects.get(rung=TELL)
    assert step.message_id == told.pk and step.by == "delivery"


def test_the_agent_reporting_the_third_miss_tells_a_person_too(ops):
    task_set()
    for second in (1, 2, 3):
        services.task_progress_record(
            name="A", outcome="failed", error=f"HTTP 50{second}", by="agent",
            now=at(minutes=3, seconds=second),
        )
    assert LongTask.objects.get(name="A").state == "blocked"
    assert [rung for rung, _ in _rungs()] == [TELL] and len(_told()) == 1
    assert _told()[0].channel == "ops"


def test_without_a_route_the_person_is_told_on_the_record_channel(db):
    task_set(next_check="等CI")
    for minutes in (10, 20, 30):
        services.watchdog_run_once(now=at(minutes=minutes))
    (told,) = _told()
    assert told.channel == "record" and told.status == "pending"


def test_the_task_page_shows_the_rungs_in_order(ops, settings):
    configure(settings, "longrun", auto_resume=True)
    task_set(next_check="等CI")
    services.heartbeat_run_once(now=at(minutes=3))
    services.keepalive_run_once(now=at(minutes=5))
    for minutes in (13, 23, 33):
        services.watchdog_run_once(now=at(minutes=minutes))
    client = Client()
    client.force_login(User.objects.create_superuser("ops", "", "pw-ops-2026"))
    task = LongTask.objects.get(name="A")
    page = client.get(f"/admin/longrun/longtask/{task.pk}/change/").content.decode()
    section = page[page.index('id="ladder-history"'):]
    section = section[: section.index("</table>")]
    shown = re.findall(r'<tr class="xw-rung-(\w+)">', section)
    assert shown == [NUDGE, RESUME, RECOVER, RECOVER, RECOVER, TELL]
    assert "recovered 3 times without visible progress in between" in section
    told = _told()[0]
    assert f"/admin/delivery/message/{told.pk}/change/" in section
