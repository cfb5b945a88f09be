"""The threads that send a batch's begun messages: as few as keep up (D-K34 to D-K36).

A batch begins up to `delivery.sends_in_flight` sends in one step and hands
them here, in the order they began. A send is a blocking HTTP request (or a
child process) whose thread holds the interpreter's lock while it builds,
signs and parses: on a receiver that answers within a millisecond, one thread
sending back to back keeps the process busy, and every thread beyond that only
adds switching and takes the lock from the batch's own steps (with 16 threads
a send cost ~40% more CPU than with 4, with 4 a worker drained less than with
2, and with 2 less than with 1, bench/delivery.py). A receiver that takes a
few milliseconds gets a second thread, which overlaps its round trips. So a
begun send may wait a moment for one of the few threads, behind the sends
begun before it.

That moment is kept short, and nil where it would matter:

- a send on a channel that does not de-duplicate (openclaw) never waits: a
  worker killed while it waited would leave it `unknown` for good, although
  nothing of it left (D-K30); the pool adds a thread for it at once;
- a channel whose sends typically take longer than `_SLOW_SEND` (a receiver
  across a network) gets a thread for each begun send, as the batch adds one
  whenever a send waits: its sends wait on the network, not on the CPU. How
  long a channel's sends take is remembered by the process across batches.
  Only while the process is not busy on the CPU, though: a send also takes
  long when it waits for the interpreter's lock, and more threads would only
  make that wait longer (a busy worker judged its fast receiver slow, grew to
  16 threads and stayed there, D-K35).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable

from xworkmate.delivery.channels.base import Outcome, Result
from xworkmate.delivery.services.claim import Started

logger = logging.getLogger("xworkmate.delivery.services")

# Threads a batch starts with: one sends a fast receiver's messages back to back, and
# the batch's steps take the interpreter's lock in its short waits; a second one only
# took turns with it for the lock (D-K36).
_FEW = 1
# A channel whose sends typically take longer than this waits on its receiver more
# than on the CPU (a loopback send takes ~0.5-0.8 ms): a second thread overlaps its
# round trips (D-K36).
_WAITING_SEND = 0.002
# A channel whose sends typically take longer than this is slow: waiting for a thread
# would only add to it (a loopback send takes ~1 ms, one across a network tens).
_SLOW_SEND = 0.010

# How long each channel's sends typically take in this process (a moving average over
# the last ~8 sends, in seconds), kept across batches.
_typical: dict[str, float] = {}
_typical_lock = threading.Lock()

# While more begun sends than this still wait for a thread, the threads have work
# without the batch's next step: it may gather the answers a while longer, so that
# one step records, and begins, many (see Senders.answers, D-K40). Two sends are
# about a millisecond of a loopback receiver: the step's round trips fit in it.
_AHEAD = 2


def _took(channel: str, seconds: float) -> None:
    with _typical_lock:
        before = _typical.get(channel, seconds)
        _typical[channel] = before + (seconds - before) / 8


def _is_slow(channel: str) -> bool:
    return _typical.get(channel, 0.0) > _SLOW_SEND


def _waits_on_receiver(channel: str) -> bool:
    return _typical.get(channel, 0.0) > _WAITING_SEND


# The process is busy when its threads used more than this share of one CPU over the
# last _CPU_SAMPLE seconds or more: the interpreter's lock lets it use about one.
_CPU_BUSY = 0.75
_CPU_SAMPLE = 0.05
_cpu_last = (time.monotonic(), time.process_time())
_cpu_share = 0.0
_cpu_lock = threading.Lock()


def _cpu_busy() -> bool:
    """Whether this process's threads keep a CPU busy (measured, not guessed): then a
    send that takes long is waiting for the interpreter's lock, not for its receiver."""
    global _cpu_last, _cpu_share
    now, used = time.monotonic(), time.process_time()
    with _cpu_lock:
        then, used_then = _cpu_last
        if now - then >= _CPU_SAMPLE:
            _cpu_share = (used - used_then) / (now - then)
            _cpu_last = (now, used)
        return _cpu_share > _CPU_BUSY


class Senders:
    """Send begun messages on as few threads as keep up; answers through `answers()`."""

    def __init__(
        self,
        send: Callable[[Started], Result],
        *,
        most: int,
        must_not_wait: Callable[[Started], bool],
    ) -> None:
        self._send = send
        self._most = max(1, most)
        self._must_not_wait = must_not_wait
        # Each begun send, and whether it must not wait (asked once, when handed).
        self._waiting: deque[tuple[Started, bool]] = deque()
        lock = threading.Lock()
        self._ready = threading.Condition(lock)  # a begun send waits: a thread may take it
        # The batch waits on this for answers; the threads wake it only when it has
        # something to decide (see answers()), not at every answer.
        self._came = threading.Condition(lock)
        self._answered: list[tuple[Started, Result]] = []
        self._gathering = False  # the batch waits for the step's answers to come
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._closed = False
        self._unanswered = 0  # handed and not yet given back by answers()

    def hand(self, begun: list[Started]) -> None:
        """Send these, in this order, as threads become free."""
        if not begun:
            return
        with self._ready:
            self._unanswered += len(begun)
            self._waiting.extend((one, self._must_not_wait(one)) for one in begun)
            self._grow()
            self._ready.notify(len(begun))

    def keep_up(self) -> None:
        """Add threads for begun sends that should not wait (the batch calls this each
        time it wakes: a channel may have turned out slow meanwhile)."""
        with self._ready:
            self._grow()

    def waiting(self) -> int:
        """How many begun sends wait for a free thread."""
        with self._ready:
            return len(self._waiting)

    def _grow(self) -> None:
        # Under the condition's lock. A thread woken but not yet running counts as idle:
        # it takes the next send that waits.
        waiting_on_network = not _cpu_busy()
        urgent = sum(
            1
            for one, must in self._waiting
            if must or (waiting_on_network and _is_slow(one.channel))
        )
        few = 0
        if self._waiting:
            overlap = waiting_on_network and any(
                _waits_on_receiver(one.channel) for one, _ in self._waiting
            )
            few = _FEW + 1 if overlap else _FEW
        target = max(len(self._threads) + urgent - self._idle, few)
        while len(self._threads) < min(target, self._most):
            thread = threading.Thread(
                target=self._run, name=f"delivery-{len(self._threads)}", daemon=True
            )
            self._threads.append(thread)
            thread.start()
            self._idle += 1  # it will take a send as soon as it runs

    def _run(self) -> None:
        with self._ready:
            self._idle -= 1  # counted as idle by _grow, which made it
        while True:
            with self._ready:
                self._idle += 1
                while not self._waiting and not self._closed:
                    self._ready.wait()
                self._idle -= 1
                if not self._waiting:
                    return  # closed, and nothing left to send
                one, _ = self._waiting.popleft()
                if self._gathering and len(self._waiting) == _AHEAD:
                    self._came.notify()  # few begun sends left to take: time for a step
            began = time.monotonic()
            try:
                result = self._send(one)
            except Exception as exc:
                # message_send turns a channel's exception into an answer already; this
                # is the last guard: the batch waits for an answer to every begun send.
                logger.exception("sending message %s raised", one.envelope.message_id)
                result = Result(Outcome.UNKNOWN, f"the send raised {type(exc).__name__}: {exc}")
            with self._ready:
                self._answered.append((one, result))
                # The first answer starts the batch's gathering; the last one it can
                # expect ends it.
                if len(self._answered) == 1 or len(self._answered) == self._unanswered:
                    self._came.notify()
            _took(one.channel, time.monotonic() - began)

    def answers(
        self, *, wait: float, gather: float, while_ahead: float = 0.0
    ) -> list[tuple[Started, Result]]:
        """The answers that came: waits up to `wait` seconds for a first one, then
        `gather` seconds more for others sent with it (one step then records several),
        but not once every send handed over has answered: no other answer can come.

        While more than `_AHEAD` begun sends still wait for a thread, the threads do
        not need the batch's next step to stay busy: it goes on gathering, up to
        `while_ahead` seconds after the first answer, until only that many wait. The
        step then records the answers of most of the window and begins as many sends
        at once, instead of paying a transaction for every few (D-K40).
        """
        with self._ready:
            if not self._answered:
                self._came.wait(timeout=wait)
                if not self._answered:
                    return []
            began = time.monotonic()
            self._gathering = True
            try:
                while len(self._answered) < self._unanswered:
                    limit = while_ahead if len(self._waiting) > _AHEAD else gather
                    left = began + limit - time.monotonic()
                    if left <= 0:
                        break
                    self._came.wait(timeout=left)
            finally:
                self._gathering = False
            got, self._answered = self._answered, []
            self._unanswered -= len(got)
        return got

    def close(self) -> None:
        """Let the threads end once every begun send is sent (they send what waits)."""
        with self._ready:
            self._closed = True
            self._ready.notify_all()
        for thread in self._threads:
            thread.join()
