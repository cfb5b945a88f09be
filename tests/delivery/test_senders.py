"""The threads a batch sends on (services.senders, D-K32): few on fast channels, one per
begun send where waiting would cost (a channel that does not de-duplicate, a slow one)."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

from xworkmate.delivery.channels.base import Envelope, Outcome, Result
from xworkmate.delivery.services import senders as senders_module
from xworkmate.delivery.services.claim import Started
from xworkmate.delivery.services.senders import Senders

WAIT = 10  # seconds; never reached when all is well


def _started(number: int, channel: str = "hook") -> Started:
    envelope = Envelope(
        message_id=number,
        purpose="plans.run",
        target=f"agent:main:{number}",
        body="x",
        body_hash="0" * 64,
        idempotency_key=f"k{number}",
        attempt=1,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    return Started(envelope=envelope, channel=channel, attempt_id=number)


class _Gate:
    """A send that blocks until released, counting how many are inside at once."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.inside = 0
        self.most_inside = 0
        self._lock = threading.Lock()

    def __call__(self, one: Started) -> Result:
        with self._lock:
            self.inside += 1
            self.most_inside = max(self.most_inside, self.inside)
        self.release.wait(WAIT)
        with self._lock:
            self.inside -= 1
        return Result(Outcome.SENT, f"HTTP 200 for {one.envelope.message_id}")


def _collect(senders: Senders, count: int) -> list[tuple[Started, Result]]:
    got: list[tuple[Started, Result]] = []
    deadline = time.monotonic() + WAIT
    while len(got) < count and time.monotonic() < deadline:
        got += senders.answers(wait=0.5, gather=0.001)
    return got


def _wait_until(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.005)


def test_it_sends_a_fast_channels_begun_sends_on_one_thread_in_order():
    gate = _Gate()
    senders = Senders(gate, most=16, must_not_wait=lambda one: False)
    senders.hand([_started(n) for n in range(12)])
    _wait_until(lambda: gate.inside == 1, "a send under way")
    senders.keep_up()
    time.sleep(0.05)
    assert gate.most_inside == 1 and senders.waiting() == 11  # the rest wait their turn
    gate.release.set()
    answers = _collect(senders, 12)
    senders.close()
    assert [one.envelope.message_id for one, _ in answers] == list(range(12))
    assert all(result.outcome is Outcome.SENT for _, result in answers)


def test_a_channel_whose_sends_wait_a_few_milliseconds_gets_a_second_thread():
    # D-K36: a receiver a few milliseconds away keeps one thread waiting on the
    # network; a second overlaps the round trips (but no more: it is not slow).
    def few_ms(one: Started) -> Result:
        time.sleep(0.004)
        return Result(Outcome.SENT, "HTTP 200")

    senders = Senders(few_ms, most=16, must_not_wait=lambda one: False)
    senders.hand([_started(n, "near") for n in range(8)])
    assert len(_collect(senders, 8)) == 8
    assert senders_module._waits_on_receiver("near") and not senders_module._is_slow("near")
    gate = _Gate()
    senders._send = gate
    senders.hand([_started(n, "near") for n in range(8, 20)])
    _wait_until(lambda: gate.inside == 2, "two sends under way")
    for _ in range(5):
        senders.keep_up()
        time.sleep(0.01)
    assert gate.most_inside == 2 and senders.waiting() == 10
    gate.release.set()
    assert len(_collect(senders, 12)) == 12
    senders.close()


def test_a_send_that_may_not_be_sent_again_never_waits_for_a_thread():
    # D-K30: on a channel that does not de-duplicate, a worker killed while a begun
    # send waited would leave it unknown for good although nothing of it left.
    gate = _Gate()
    senders = Senders(gate, most=16, must_not_wait=lambda one: one.channel == "openclaw")
    senders.hand([_started(n, "openclaw") for n in range(10)])
    _wait_until(lambda: gate.inside == 10, "every begun send under way at once")
    assert senders.waiting() == 0
    gate.release.set()
    assert len(_collect(senders, 10)) == 10
    senders.close()


def test_it_never_runs_more_threads_than_the_window():
    gate = _Gate()
    senders = Senders(gate, most=3, must_not_wait=lambda one: True)
    senders.hand([_started(n) for n in range(7)])
    _wait_until(lambda: gate.inside == 3, "three sends under way")
    time.sleep(0.05)
    assert gate.most_inside == 3 and senders.waiting() == 4
    gate.release.set()
    assert len(_collect(senders, 7)) == 7
    senders.close()


def _learning_slow(channel: str) -> Senders:
    """Senders that have sent four messages on `channel`, 30 ms each: the process has
    learnt that the channel is slow."""

    def slow(one: Started) -> Result:
        time.sleep(0.03)
        return Result(Outcome.SENT, "HTTP 200")

    senders = Senders(slow, most=16, must_not_wait=lambda one: False)
    senders.hand([_started(n, channel) for n in range(4)])
    assert len(_collect(senders, 4)) == 4
    assert senders_module._is_slow(channel)
    return senders


def test_a_slow_channel_gets_a_thread_for_each_begun_send():
    senders = _learning_slow("far")
    assert not senders_module._is_slow("hook")
    gate = _Gate()
    senders._send = gate
    senders.hand([_started(n, "far") for n in range(4, 16)])
    for _ in range(20):  # the batch calls keep_up each time it wakes
        senders.keep_up()
        if gate.inside == 12:
            break
        time.sleep(0.01)
    assert gate.inside == 12 and senders.waiting() == 0
    gate.release.set()
    assert len(_collect(senders, 12)) == 12
    senders.close()


def test_a_slow_channel_gets_no_more_threads_while_the_process_is_busy_on_the_cpu():
    # D-K35: a send also takes long while it waits for the interpreter's lock; judged
    # slow then, a busy worker would add threads that only make that wait longer.
    senders = _learning_slow("farther")
    stop = threading.Event()

    def spin() -> None:  # pure Python: holds the interpreter's lock, keeps a CPU busy
        while not stop.is_set():
            sum(range(1000))

    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    try:
        for _ in range(6):  # the batch wakes and looks every few milliseconds
            senders.keep_up()
            time.sleep(senders_module._CPU_SAMPLE / 2)
        gate = _Gate()
        senders._send = gate
        threads_before = len(senders._threads)
        senders.hand([_started(n, "farther") for n in range(4, 12)])
        for _ in range(10):
            senders.keep_up()
            time.sleep(0.02)
        assert senders_module._cpu_busy()
        assert len(senders._threads) == threads_before  # none added for the slow channel
        assert gate.inside <= threads_before and senders.waiting() >= 8 - threads_before
    finally:
        stop.set()
        spinner.join()
    # The process idle again: the slow channel's waiting sends get their threads.
    _wait_until(lambda: (senders.keep_up(), gate.inside == 8)[1], "a thread for each")
    gate.release.set()
    assert len(_collect(senders, 8)) == 8
    senders.close()


def test_a_send_that_raises_still_answers_unknown():
    def broken(one: Started) -> Result:
        raise RuntimeError("a channel bug")

    senders = Senders(broken, most=4, must_not_wait=lambda one: False)
    senders.hand([_started(1)])
    [(one, result)] = _collect(senders, 1)
    senders.close()
    assert one.envelope.message_id == 1 and result.outcome is Outcome.UNKNOWN
    assert "RuntimeError: a channel bug" in result.detail


def test_close_sends_what_was_handed_before_the_threads_end():
    sent: list[int] = []
    senders = Senders(
        lambda one: sent.append(one.envelope.message_id) or Result(Outcome.SENT, "ok"),
        most=2,
        must_not_wait=lambda one: False,
    )
    senders.hand([_started(n) for n in range(6)])
    senders.close()
    assert sorted(sent) == list(range(6))


def test_gathering_stops_once_every_handed_send_has_answered():
    # The batch gathers answers for a moment after the first, so one step records
    # several; once no send handed over is left unanswered none can come, and the
    # batch must not sit out the moment (at every batch's end it did, for nothing).
    gate = _Gate()
    senders = Senders(gate, most=4, must_not_wait=lambda one: False)
    senders.hand([_started(1), _started(2)])
    gate.release.set()
    began = time.monotonic()
    got = senders.answers(wait=WAIT, gather=10 * WAIT)
    returned_after = time.monotonic() - began
    assert sorted(one.envelope.message_id for one, _ in got) == [1, 2]
    assert returned_after < WAIT  # long before the 100 s gather
    # The count of unanswered sends starts again from there.
    senders.hand([_started(3)])
    assert [one.envelope.message_id for one, _ in senders.answers(wait=WAIT, gather=10 * WAIT)] == [3]
    senders.close()


class _Turnstile:
    """A send that waits until the test lets one more through."""

    def __init__(self) -> None:
        self.turns = threading.Semaphore(0)

    def __call__(self, one: Started) -> Result:
        assert self.turns.acquire(timeout=WAIT)
        return Result(Outcome.SENT, f"HTTP 200 for {one.envelope.message_id}")


def test_gathering_goes_on_while_the_thread_still_has_begun_sends_waiting():
    # D-K40: one thread sends a fast channel's ten begun sends back to back. While
    # more than _AHEAD of them still wait for it, the batch needs no step to keep it
    # busy: it keeps gathering past the short gather, and steps once only _AHEAD wait.
    turnstile = _Turnstile()
    senders = Senders(turnstile, most=16, must_not_wait=lambda one: False)
    senders.hand([_started(n) for n in range(1, 11)])
    gathered: list[list[tuple[Started, Result]]] = []
    collector = threading.Thread(
        target=lambda: gathered.append(
            senders.answers(wait=WAIT, gather=0.002, while_ahead=10 * WAIT)
        )
    )
    collector.start()
    turnstile.turns.release()  # the first answer: eight still wait for the thread
    time.sleep(0.3)  # far past the 2 ms gather
    assert collector.is_alive(), "the gathering stopped while the thread had sends waiting"
    # Let sends through until only _AHEAD wait (one more is being sent): the batch
    # then takes what has come, more than the first answer, and steps.
    ahead = senders_module._AHEAD
    for _ in range(10 - 1 - ahead - 1):
        turnstile.turns.release()
    collector.join(timeout=WAIT)
    assert not collector.is_alive(), "the gathering went on with few sends left waiting"
    first_step = [one.envelope.message_id for one, _ in gathered[0]]
    assert len(first_step) > 1 and first_step == list(range(1, len(first_step) + 1))
    for _ in range(ahead + 1):
        turnstile.turns.release()
    rest = _collect(senders, 10 - len(first_step))
    assert sorted(one.envelope.message_id for one, _ in rest) == list(
        range(len(first_step) + 1, 11)
    )
    senders.close()


def test_gathering_stops_at_the_bound_even_while_sends_wait():
    # An answer is recorded at most `while_ahead` after the first of its step came.
    turnstile = _Turnstile()
    senders = Senders(turnstile, most=16, must_not_wait=lambda one: False)
    senders.hand([_started(n) for n in range(1, 11)])
    turnstile.turns.release()
    got = senders.answers(wait=WAIT, gather=0.002, while_ahead=0.05)
    assert [one.envelope.message_id for one, _ in got] == [1]
    for _ in range(9):
        turnstile.turns.release()
    assert len(_collect(senders, 9)) == 9
    senders.close()
