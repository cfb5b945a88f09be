"""The delivery outbox: every message the service sends, and whether it really arrived.

Part of the kernel: plans and long-run mode call `outbox_enqueue`
(xworkmate.delivery.services) without knowing which channel delivers the
message; the channels (record, webhook, openclaw) live in `channels/`.
"""
