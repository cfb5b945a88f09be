"""Fixtures of the outbox tests: a real local HTTP receiver and a config routing to it."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from xworkmate.config import DELIVERY_PURPOSES, DeliveryChannel


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # A batch may open up to delivery.sends_in_flight connections at once (one a
    # request: this server speaks HTTP/1.0). With the default listen backlog of 5
    # the kernel dropped the rest, the senders waited a second to connect again,
    # and under load a send failed that the test meant to arrive.
    request_queue_size = 128


class Receiver:
    """A webhook receiver on 127.0.0.1: records each request, answers as told."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.status = 200
        self.delay = 0.0  # seconds before answering
        # Called with each request as it arrives (before the answer).
        self.on_request: Any = None
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # the receiver's one method
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                request = {"headers": dict(self.headers), "body": body, "json": json.loads(body)}
                receiver.requests.append(request)
                if receiver.on_request is not None:
                    receiver.on_request(request)
                if receiver.delay:
                    time.sleep(receiver.delay)
                self.send_response(receiver.status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                return

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver()
    yield running
    running.close()


def use_channels(settings: Any, *channels: DeliveryChannel, routes: dict[str, str]) -> None:
    config = settings.XWORKMATE
    all_routes = dict.fromkeys(DELIVERY_PURPOSES, "record") | routes
    settings.XWORKMATE = dataclasses.replace(
        config,
        delivery_channels=(*config.delivery_channels[:1], *channels),
        delivery_routes=all_routes,
    )


@pytest.fixture
def webhook(db: None, settings: Any, receiver: Receiver) -> Receiver:
    """longrun.progress goes to the receiver (secret "s3"); the rest stays on record."""
    channel = DeliveryChannel(
        name="hook",
        kind="webhook",
        url=receiver.url,
        secret="s3",
        read_timeout=timedelta(seconds=0.5),
    )
    use_channels(settings, channel, routes={"longrun.progress": "hook"})
    return receiver
