"""The outbox's write path: enqueue, claim, record each send's outcome, acknowledge.

Every message goes through one life: `outbox_enqueue` writes it in the
caller's transaction; a worker (on commit) or the dispatch job claims it for a
batch (`messages_claim`: only a claim that expires); the batch
(`deliveries_run`) begins each send in a step (`deliveries_step`) that commits
its attempt and its turn to `unknown` right before the send, and records each
answer, with the purpose's outcome handlers, in the next step (D-K30).
The `record` channel is not pushed: the bridge fetches and acknowledges.

So `unknown` means a send began and no answer was recorded: a worker that dies
mid-send leaves that message unknown, never sent; the messages of its batch it
had not begun stay as they were and are claimable again once the claim runs
out; no second dispatcher takes a claimed message meanwhile (row locks with
SKIP LOCKED decide who claims). Attempts whose worker is gone are closed as
abandoned by the dispatch job (`attempts_close_abandoned`).


One module per operation: enqueue, claim (and send), record (a batch's steps),
batch (running one), acknowledge (and resend); what several of them read (the
channels' config, the retry rules) is in _common.
"""

from __future__ import annotations

from xworkmate.delivery.outcomes import (
    OutcomeHandler,
    register_outcome_handler,
    unregister_outcome_handler,
)
from xworkmate.delivery.services._common import (
    DELIVER_TASK,
    DeliveryError,
    channel_config,
    channel_deduplicates,
    retry_rules,
)
from xworkmate.delivery.services.acknowledge import message_acknowledge, message_request_resend
from xworkmate.delivery.services.batch import deliveries_run, sends_begin
from xworkmate.delivery.services.breaker import breakers_tick
from xworkmate.delivery.services.claim import (
    CLAIM_LEASE,
    Claimed,
    Started,
    message_send,
    messages_claim,
    messages_release,
)
from xworkmate.delivery.services.enqueue import outbox_enqueue
from xworkmate.delivery.services.record import (
    SendOutcome,
    attempts_close_abandoned,
    deliveries_step,
)

__all__ = [
    "CLAIM_LEASE",
    "DELIVER_TASK",
    "Claimed",
    "DeliveryError",
    "OutcomeHandler",
    "SendOutcome",
    "Started",
    "attempts_close_abandoned",
    "breakers_tick",
    "channel_config",
    "channel_deduplicates",
    "deliveries_run",
    "deliveries_step",
    "message_acknowledge",
    "message_request_resend",
    "message_send",
    "messages_claim",
    "messages_release",
    "outbox_enqueue",
    "register_outcome_handler",
    "retry_rules",
    "sends_begin",
    "unregister_outcome_handler",
]
