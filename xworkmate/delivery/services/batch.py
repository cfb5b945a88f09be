"""Run one claimed batch: up to `window` sends in flight, a step per answer (D-K30).

The database work stays on the calling thread (its connection); the sends run on
a few threads (services.senders, D-K34), so a batch overlaps its sends with the
steps that record the answers and begin the next sends, and one step usually
carries several of each. Two sends for one session are never in flight at once,
and a session's messages begin in the order they were claimed (oldest first), as
a receiver reading one session's messages expects.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from datetime import datetime

from django.utils import timezone

from xworkmate.delivery.services._common import _channel
from xworkmate.delivery.services.claim import (
    CLAIM_LEASE,
    Claimed,
    Started,
    message_send,
    messages_claim,
    messages_release,
)
from xworkmate.delivery.services.record import SendOutcome, deliveries_step
from xworkmate.delivery.services.senders import Senders

logger = logging.getLogger("xworkmate.delivery.services")

# A step that failed (the database went away) is tried again after this pause.
_STEP_RETRY_SECONDS = 0.5
# How long, after the first answer, a batch waits for the other sends in flight before
# its next step: about a loopback request, a fraction of a step's transaction.
_GATHER_SECONDS = 0.002
# How long it may gather while the sending threads still have begun sends waiting
# (services.senders): a bound on how late an answer is recorded (D-K40).
_GATHER_WHILE_AHEAD = 0.02
# How long a batch sleeps waiting for an answer; shorter while begun sends wait for a
# thread, so that the senders can be given another in time (services.senders).
_WAKE_SECONDS = 0.5
_WAKE_WHILE_WAITING = 0.002


def _next_to_start(queue: deque[Claimed], busy: set[str], room: int) -> list[Claimed]:
    """Up to `room` claims from the front of `queue` whose session has no send in
    flight, at most one per session, in queue order; taken out of the queue."""
    chosen: list[Claimed] = []
    seen: set[str] = set()
    kept: deque[Claimed] = deque()
    while queue:
        claim = queue.popleft()
        if len(chosen) < room and claim.target not in busy and claim.target not in seen:
            chosen.append(claim)
        else:
            kept.append(claim)
        seen.add(claim.target)  # a later message of this session waits for this one
    queue.extend(kept)
    return chosen


def deliveries_run(claims: list[Claimed], *, window: int, budget_seconds: float, by: str) -> int:
    """Send the batch; answer how many sends began. Claims not begun within
    `budget_seconds` are released (sendable again at once, nothing counted); the
    sends in flight then still finish and are recorded."""
    queue = deque(claims)
    deadline = time.monotonic() + budget_seconds
    renew_at = time.monotonic() + CLAIM_LEASE.total_seconds() / 2
    in_flight: dict[int, Started] = {}  # begun and not answered, by message id
    finished: list[SendOutcome] = []
    begun = 0
    first_error: Exception | None = None
    senders = Senders(
        message_send,
        most=window,
        # D-K30: a send that may not be sent again must not wait for a thread.
        must_not_wait=lambda one: not _channel(one.channel).deduplicates,
    )
    try:
        while True:
            if queue and time.monotonic() >= deadline:
                try:
                    messages_release(list(queue), timezone.now())
                except Exception:
                    logger.exception("releasing %d unstarted messages failed", len(queue))
                queue.clear()  # released, or their claims simply run out
            busy = {started.envelope.target for started in in_flight.values()}
            start = _next_to_start(queue, busy, window - len(in_flight)) if queue else []
            renew = list(queue) if queue and time.monotonic() >= renew_at else []
            if finished or start or renew:
                try:
                    started = deliveries_step(
                        finished=finished, start=start, renew=renew, now=timezone.now(), by=by
                    )
                except Exception as exc:
                    # A handler raised (only its message stays unrecorded), or the
                    # database is away (the answers stay unrecorded: their messages
                    # stay `unknown` and the dispatch job closes their attempts as
                    # abandoned). The claims not begun wait for the next step.
                    logger.exception("a delivery step failed")
                    first_error = first_error or exc
                    started = []
                    queue.extendleft(reversed(start))
                    time.sleep(_STEP_RETRY_SECONDS)
                finished = []
                if renew:
                    renew_at = time.monotonic() + CLAIM_LEASE.total_seconds() / 2
                # A claim the step did not begin ran out: it is not this batch's now.
                for one in started:
                    in_flight[one.envelope.message_id] = one
                senders.hand(started)
                begun += len(started)
            if not queue and not in_flight:
                break
            if in_flight:
                # Wake for the first answer (or to renew the claims still waiting, or
                # to give the senders a thread more), then gather the others: while the
                # threads still have begun sends waiting, until only a few do (at most
                # _GATHER_WHILE_AHEAD), else for a moment. One step then records many
                # answers and begins as many sends, instead of paying a transaction for
                # each (D-K40).
                wait = _WAKE_WHILE_WAITING if senders.waiting() else _WAKE_SECONDS
                gathered = senders.answers(
                    wait=wait, gather=_GATHER_SECONDS, while_ahead=_GATHER_WHILE_AHEAD
                )
                for one, result in gathered:
                    finished.append((in_flight.pop(one.envelope.message_id), result))
                senders.keep_up()
            else:
                time.sleep(0.05)  # only claims whose step failed: try again shortly
    finally:
        senders.close()
    if first_error is not None:
        raise first_error
    return begun


def sends_begin(*, new: bool, now: datetime, limit: int, by: str) -> list[Started]:
    """Claim and begin at once, without sending: exactly where a worker killed just
    as its sends started leaves the outbox. The tests stop there to check it."""
    return deliveries_step(
        finished=[], start=messages_claim(new=new, now=now, limit=limit), renew=[], now=now, by=by
    )
