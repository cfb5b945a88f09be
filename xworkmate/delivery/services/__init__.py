"""The outbox's write path: enqueue, claim, record each send's outcome, acknowledge.

Every message goes through one life: `outbox_enqueue` writes it in the
caller's transaction; a worker (on commit) or the dispatch job claims it, in a
batch (`messages_claim`), and sends it through its channel;
`messages_record_outcomes` writes the outcome the channel reported and runs
the purpose's outcome handlers in that same transaction.
The `record` channel is not pushed: the bridge fetches and acknowledges.

Claiming marks the message `unknown` before anything is sent, and commits:
a worker that dies mid-send leaves it unknown, never sent, and no second
dispatcher takes it meanwhile (row locks with SKIP LOCKED decide who claims).


One module per operation: enqueue, claim (and send), record, acknowledge (and
resend); what several of them read (the channels' config, the retry rules)
is in _common.
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
    retry_rules,
)
from xworkmate.delivery.services.acknowledge import message_acknowledge, message_request_resend
from xworkmate.delivery.services.claim import Claimed, message_send, messages_claim
from xworkmate.delivery.services.enqueue import outbox_enqueue
from xworkmate.delivery.services.record import SendOutcome, messages_record_outcomes

__all__ = [
    "DELIVER_TASK",
    "Claimed",
    "DeliveryError",
    "OutcomeHandler",
    "SendOutcome",
    "channel_config",
    "message_acknowledge",
    "message_request_resend",
    "message_send",
    "messages_claim",
    "messages_record_outcomes",
    "outbox_enqueue",
    "register_outcome_handler",
    "retry_rules",
    "unregister_outcome_handler",
]
