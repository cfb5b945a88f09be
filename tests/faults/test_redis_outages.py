"""A real worker survives Redis going away and coming back (issue 19 req 2).

The test's own redis-server (never the machine's) goes down eight times for
5 s, by SIGTERM (a clean shutdown) and by SIGKILL (a crash) in turn, and is
started again on the same port, empty. A real `celery worker` delivers the
outbox's messages to a real webhook receiver throughout; messages committed
while Redis is down could not be published and are sent by the dispatch job
beat runs. After every outage the worker is the same process, and it consumes
again: everything committed reaches the receiver exactly once.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import configure
from tests.integration.conftest import CeleryProcesses, wait_for
from tests.integration.test_delivery_real import (  # noqa: F401 (fixtures)
    SECRET,
    Receiver,
    enqueue,
    receiver,
    routed,
)
from tests.support.own_redis import OwnRedis, own_redis, publishing_to
from xworkmate.delivery.models import Attempt, Message

pytestmark = pytest.mark.integration

OUTAGES = 8
OUTAGE_SECONDS = 5
PURPOSE = "longrun.progress"


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[OwnRedis]:
    with own_redis(tmp_path / "redis") as server:
        yield server


def _config(hook: Receiver) -> str:
    # The dispatch job every second, for what was committed while Redis was down;
    # a grace long enough that what was published is the worker's to send.
    return (
        '[delivery]\ndispatch_grace = "3s"\n'
        "[[delivery.channels]]\n"
        f'name = "hook"\nkind = "webhook"\nurl = "{hook.url}"\nsecret = "{SECRET}"\n'
        f'[delivery.routes]\n"{PURPOSE}" = "hook"\n'
        '[[periodic_jobs]]\nname = "delivery-dispatch"\nevery = "1s"\n'
    )


def _all_sent(keys: list[str]) -> Any:
    sent = Message.objects.filter(idempotency_key__in=keys, status=Message.SENT)
    return lambda: sent.count() == len(keys)


def test_the_worker_survives_eight_redis_outages_and_everything_is_delivered(
    routed: Receiver,  # noqa: F811 (the fixture)
    redis_server: OwnRedis, tmp_path: Path, settings: Any, capsys: Any
) -> None:
    # The grace is the enqueuer's: it dates the message for the dispatch job.
    configure(settings, "delivery", dispatch_grace=timedelta(seconds=3))
    processes = CeleryProcesses(tmp_path, broker_url=redis_server.url())
    try:
        worker = processes.start("worker", _config(routed))
        processes.start("beat", _config(routed))
        keys: list[str] = []
        by_worker_after: list[str] = []
        with publishing_to(redis_server.url()):
            started = time.monotonic()
            for outage in range(OUTAGES + 1):
                # Up: a message asked of the worker after commit.
                up_key = f"up-{outage}"
                keys.append(up_key)
                enqueue(up_key, target=f"agent:main:{outage}")
                wait_for(_all_sent(keys), timeout=60, what=f"delivery before outage {outage}")
                by_worker_after.append(up_key)
                assert worker.poll() is None, processes.logs()  # the same process, alive
                if outage == OUTAGES:
                    break
                redis_server.stop(sig=signal.SIGKILL if outage % 2 else signal.SIGTERM)
                # Down: committed, the publish refused; the dispatch job sends it later.
                down_key = f"down-{outage}"
                keys.append(down_key)
                enqueue(down_key, target=f"agent:main:{outage}")
                time.sleep(OUTAGE_SECONDS)
                redis_server.start()
                wait_for(_all_sent(keys), timeout=90, what=f"delivery after outage {outage}")
                assert worker.poll() is None, processes.logs()
        assert worker.poll() is None, processes.logs()
        assert routed.by_key == {key: 1 for key in keys}, processes.logs()
        # The worker itself took the message committed after each outage (it consumes again).
        workers = Attempt.objects.filter(message__idempotency_key__in=by_worker_after, by="worker")
        assert workers.count() == len(by_worker_after), list(
            Attempt.objects.values_list("message__idempotency_key", "by")
        )
        with capsys.disabled():
            print(
                f"\nredis outages: {OUTAGES} of {OUTAGE_SECONDS}s; worker pid {worker.pid} "
                f"survived all; messages committed {len(keys)}, delivered {routed.count()}, "
                f"lost {len(keys) - len(routed.by_key)}; "
                f"{time.monotonic() - started:.0f}s"
            )
    finally:
        processes.stop()
