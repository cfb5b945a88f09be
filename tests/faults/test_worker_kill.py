"""Issue 21: kill -9 the worker with 240 webhook messages in flight (D-K30).

A real Celery worker (prefork, two children) and beat on the suite's own PostgreSQL
and Redis send 240 messages, one per session, to a receiver that takes 40 ms per
request. Once sends are under way the worker is killed with SIGKILL: the whole
worker (main process and children; then it is started again), or only its pool
children (its main process starts new ones). At the moment of the kill the outbox
is read: each message is exactly one of sent, begun without an answer (`unknown`,
its attempt open) or not begun (`pending`, perhaps still claimed by the dead batch,
with no attempt). Then, after recovery: no message lost, every one sent; a message
reached the receiver twice only if its send had begun before the kill, and both
times with the same Idempotency-Key; a message not begun at the kill arrived once,
as its first attempt.
"""

from __future__ import annotations

import time

import pytest
from django.db import transaction
from django.utils import timezone

from tests.faults.kill import KILLS, kill_9, outbox_snapshot
from tests.faults.receiver import Receiver
from tests.integration.conftest import CeleryProcesses, clear_broker, wait_for
from xworkmate.delivery.models import Message
from xworkmate.delivery.services import outbox_enqueue

MESSAGES = 240


def _config(receiver: Receiver) -> str:
    return f"""
[delivery]
batch_size = 120
sends_in_flight = 4
dispatch_grace = "2s"

[longrun]
# Begun-without-answer messages are sent again (the webhook de-duplicates) soon.
unknown_cooldown = "6s"

{receiver.channel_toml(["longrun.progress"], read_timeout="5s")}
[[periodic_jobs]]
name = "delivery-dispatch"
every = "1s"
"""


@pytest.mark.parametrize("what", KILLS)
def test_kill_9_the_worker_mid_batch_loses_nothing_and_doubles_only_begun_sends(
    own_services, tmp_path, settings, capsys, what
):
    clear_broker()
    receiver = Receiver(tmp_path, delay=0.04)
    receiver.route_here(settings, ["longrun.progress"])
    processes = CeleryProcesses(tmp_path)
    config = _config(receiver)
    try:
        worker = processes.start("worker", config, name="worker-1")
        processes.start("beat", config)
        wait_for(lambda: "ready" in (tmp_path / "worker-1.log").read_text(errors="replace"),
                 timeout=60, what="the worker to be ready")
        now = timezone.now()
        with transaction.atomic():
            ids = [
                outbox_enqueue(purpose="longrun.progress", target=f"agent:faults:s{n}",
                               body=f"progress {n}", idempotency_key=f"kill-{n}", now=now).pk
                for n in range(MESSAGES)
            ]
        wait_for(lambda: len(receiver.requests()) >= 30, timeout=60, what="sends under way")
        killed_at = time.monotonic()
        kill_9(worker, what)
        time.sleep(0.5)  # what was in flight on the wire lands (or not) at the receiver
        at_kill = outbox_snapshot()
        received_at_kill = receiver.counts()
        if what == "whole worker":
            processes.start("worker", config, name="worker-2")

        def all_sent() -> bool:
            return Message.objects.filter(pk__in=ids, status="sent").count() == MESSAGES

        wait_for(all_sent, timeout=180, what="every message sent after the kill")
        recovery = time.monotonic() - killed_at
        counts = receiver.counts()
        keys = {pk: f"kill-{pk - ids[0]}" for pk in ids}
        lost = [pk for pk in ids if counts[keys[pk]] == 0]
        doubled = {pk for pk in ids if counts[keys[pk]] > 1}
        begun = at_kill["begun, no answer"]
        figures = (
            f"kill -9 ({what}) with {MESSAGES} messages: at the kill "
            f"{len(at_kill['sent'])} sent, {len(begun)} begun without an answer, "
            f"{len(at_kill['not begun'])} not begun ({len(at_kill['not begun, claimed'])} "
            f"of them claimed by the dead batch); after: lost {len(lost)}, "
            f"doubled {len(doubled)} (all begun before the kill: {doubled <= begun}), "
            f"recovery {recovery:.1f}s"
        )
        with capsys.disabled():  # the figures, in the suite's output
            print("\n" + figures)
        assert at_kill["other"] == set()
        assert at_kill["open attempts"] == begun  # unknown means: a send began, no answer
        assert lost == []
        # A second arrival only for a message whose send had begun before the kill.
        assert doubled <= begun, sorted(doubled - begun)
        for request in receiver.requests():
            assert request["header"] == request["key"] == keys[int(request["id"])]
        # A message not begun at the kill was sent once, as its first attempt: the dead
        # batch's claim cost it nothing.
        for pk in at_kill["not begun"]:
            assert counts[keys[pk]] == 1 and received_at_kill[keys[pk]] == 0
            assert Message.objects.get(pk=pk).attempt_count == 1
    finally:
        processes.stop()
        receiver.stop()

