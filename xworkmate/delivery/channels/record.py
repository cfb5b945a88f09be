"""The `record` channel: nothing is pushed; the message waits for the bridge to fetch it.

The bridge polls `GET /api/delivery/pending?sessionKey=…` and acknowledges
each message it has put into the session (`POST /api/delivery/<id>/ack`); only
that acknowledgement makes the message sent (xworkmate.delivery.services).
It needs no server, so it is the default route of every purpose.
"""

from __future__ import annotations

from xworkmate.delivery.channels.base import Envelope, Outcome, Result

__all__ = ["RecordChannel"]


class RecordChannel:
    kind = "record"
    deduplicates = False

    def __init__(self, *, name: str) -> None:
        self.name = name

    def send(self, envelope: Envelope) -> Result:
        # Never called by the dispatcher (record messages are not pushed); if it
        # were, nothing was delivered.
        return Result(Outcome.FAILED, "the record channel is polled, not pushed")
