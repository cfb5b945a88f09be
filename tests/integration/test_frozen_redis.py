"""D-K23: a Redis that hangs (SIGSTOP) instead of refusing holds up no request.

The test starts its own redis-server on a free port and freezes only that one,
by its PID; the machine's shared Redis is never touched.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from celery import Celery
from django.conf import settings as django_settings

from tests.support.own_redis import own_redis
from xworkmate.delivery.services import enqueue
from xworkmate.health import check_broker

# Generous: the bound is the broker's socket timeout; a call that hangs never returns.
CEILING_SECONDS = 60


@pytest.fixture
def frozen_redis(tmp_path: Any) -> Iterator[str]:
    with own_redis(tmp_path / "redis") as server:
        server.freeze()
        yield server.url()
        # Leaving the block thaws it before stopping it.


def _returns(call: Any) -> tuple[bool, Any]:
    """Run `call` in a thread; (whether it returned before the ceiling, its result)."""
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(call()), daemon=True)
    thread.start()
    thread.join(timeout=CEILING_SECONDS)
    return (not thread.is_alive(), result[0] if result else None)


def test_the_health_check_reports_a_frozen_broker_as_down(settings, frozen_redis):
    settings.CELERY_BROKER_URL = frozen_redis
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": 3600, "socket_timeout": 5.0, "socket_connect_timeout": 5.0,
    }
    returned, answer = _returns(check_broker)
    assert returned
    assert answer["status"] == "down" and answer["transport"] == "redis"


def test_publishing_to_a_frozen_broker_gives_up_and_leaves_the_message_to_dispatch(
    frozen_redis, caplog, monkeypatch
):
    # Celery prefers CELERY_BROKER_URL from the environment to the app's own
    # broker; the integration run sets it to the shared Redis.
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    app = Celery("frozen-redis-test", broker=frozen_redis, set_as_current=False)
    app.conf.broker_transport_options = {
        key: value
        for key, value in django_settings.CELERY_BROKER_TRANSPORT_OPTIONS.items()
        if key in ("socket_timeout", "socket_connect_timeout")
    } or {"socket_timeout": 5.0, "socket_connect_timeout": 5.0}
    app.conf.broker_connection_timeout = django_settings.CELERY_BROKER_CONNECTION_TIMEOUT

    def publish() -> None:
        app.set_current()  # the current app is the thread's own
        enqueue._ask_a_worker(4242)

    try:
        with caplog.at_level(logging.WARNING, logger="xworkmate.delivery.services"):
            returned, _ = _returns(publish)
    finally:
        app.close()
    assert returned
    # The frozen broker was the one asked: the publish gave up, nothing was sent.
    assert "could not queue message 4242; the dispatch job will send it" in caplog.text
