"""The channel circuit breaker (D-K33) on PostgreSQL, with workers racing.

Several threads, each on its own connection, do what several Celery workers
do at once: send batches to a receiver that refuses everything, and run the
dispatch job's tick together. The breaker must open once, tell once, pick
one probe, and move each message exactly once.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.conftest import configure
from tests.delivery.conftest import Receiver, use_channels
from tests.support.threads import in_threads
from xworkmate.config import DeliveryChannel
from xworkmate.delivery.models import Breaker, Message
from xworkmate.delivery.services import breakers_tick, outbox_enqueue
from xworkmate.delivery.tasks import deliver

pytestmark = pytest.mark.usefixtures("real_services")

THREADS = 6
PURPOSE = "longrun.progress"


@pytest.fixture
def receivers(settings) -> Iterator[tuple[Receiver, Receiver]]:
    primary, backup = Receiver(), Receiver()
    primary.status = 500
    use_channels(
        settings,
        DeliveryChannel(
            name="primary", kind="webhook", url=primary.url,
            read_timeout=timedelta(seconds=2), fallback="backup",
        ),
        DeliveryChannel(name="backup", kind="webhook", url=backup.url),
        routes={PURPOSE: "primary"},
    )
    configure(settings, "delivery", breaker_failures=3, sends_in_flight=1, batch_size=1)
    yield primary, backup
    primary.close()
    backup.close()


def _enqueue(key: str) -> Message:
    return outbox_enqueue(
        purpose=PURPOSE, target=f"agent:main:{key}", body=f"正在看：{key}",
        idempotency_key=key, now=timezone.now(),
    )


def test_racing_workers_open_the_breaker_once_and_tell_once(receivers):
    primary, _ = receivers
    messages = [_enqueue(f"m{i}") for i in range(THREADS * 2)]
    in_threads(lambda i: [deliver(m.pk) for m in messages[i::THREADS]], THREADS)

    breaker = Breaker.objects.get(channel="primary")
    assert breaker.state == "open" and breaker.times_opened == 1
    assert breaker.failures >= 3
    assert Message.objects.filter(purpose="delivery.breaker").count() == 1
    # Every request the receiver saw is one attempt, and none was begun once it was open.
    attempts = sum(m.attempt_count for m in Message.objects.filter(purpose=PURPOSE))
    assert attempts == len(primary.requests) < len(messages)


def test_racing_ticks_move_each_message_once_and_pick_one_probe(receivers):
    first = [_enqueue(f"m{i}") for i in range(3)]
    for message in first:
        deliver(message.pk)
    assert Breaker.objects.get(channel="primary").state == "open"
    waiting = [_enqueue(f"w{i}") for i in range(20)]

    moved: list[int] = []
    in_threads(lambda i: moved.append(breakers_tick(timezone.now())), THREADS)
    assert sum(moved) == len(first) + len(waiting)  # each message moved by one tick only
    assert set(Message.objects.filter(purpose=PURPOSE).values_list("channel", flat=True)) == {
        "backup"
    }

    # After the cool-down, the ticks race to pick the probe: exactly one is picked.
    Breaker.objects.filter(channel="primary").update(probe_after=timezone.now())
    probes = [_enqueue(f"p{i}") for i in range(4)]
    in_threads(lambda i: breakers_tick(timezone.now()), THREADS)
    breaker = Breaker.objects.get(channel="primary")
    # The oldest a tick could lock (a racing tick may hold the very oldest for a moment).
    assert breaker.state == "half_open" and breaker.probe_message_id in {p.pk for p in probes}
    noted = Message.objects.filter(route_note__startswith="the probe of")
    assert list(noted.values_list("pk", flat=True)) == [breaker.probe_message_id]
