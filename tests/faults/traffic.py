"""Client traffic for the fault tests: threads calling the real API, every answer recorded.

A call that gets no answer at all (a reset, or nothing within CLIENT_TIMEOUT,
far beyond any bound the service sets itself) is recorded with status 0, so a
test can tell a hang or a dropped connection from an answer.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any, NamedTuple

CLIENT_TIMEOUT = 120


class Call(NamedTuple):
    kind: str
    phase: str  # Calls.phase when the call was made
    status: int  # 0: no answer
    took: float
    answer: Any  # the JSON answer, else the first 200 bytes (or the error)
    headers: dict[str, str]
    sent: Any  # the JSON body sent
    started: float  # time.monotonic()


class Calls:
    """Every call's answer, across the client threads, tagged with the phase it began in."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.phase = "before"
        self.rows: list[Call] = []

    def call(self, kind: str, method: str, url: str, token: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            url, data=data, method=method,
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        phase = self.phase
        started = time.monotonic()
        headers: dict[str, str] = {}
        try:
            with urllib.request.urlopen(request, timeout=CLIENT_TIMEOUT) as response:
                status, headers, raw = response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as exc:
            status, headers, raw = exc.code, dict(exc.headers), exc.read()
        except OSError as exc:  # no answer at all: a hang, a reset
            status, raw = 0, str(exc).encode()
        took = time.monotonic() - started
        try:
            answer = json.loads(raw)
        except ValueError:
            answer = raw[:200]
        with self.lock:
            self.rows.append(Call(kind, phase, status, took, answer, headers, body, started))
        return answer

    def worst(self, kind: str, phases: tuple[str, ...]) -> float:
        return max((r.took for r in self.rows if r.kind == kind and r.phase in phases), default=0.0)


def loop(stop: threading.Event, work: Callable[[int], None]) -> threading.Thread:
    """A daemon thread calling `work(turn)` until `stop` is set (started by the caller)."""

    def run() -> None:
        turn = 0
        while not stop.is_set():
            work(turn)
            turn += 1
            time.sleep(0.05)

    return threading.Thread(target=run, daemon=True)
