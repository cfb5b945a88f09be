"""The configured channels as objects: one instance per channel and process."""

from __future__ import annotations

from functools import cache

from xworkmate.config import DeliveryChannel
from xworkmate.delivery.channels.base import Channel

__all__ = ["build_channel"]


@cache
def build_channel(config: DeliveryChannel) -> Channel:
    """The channel for one `[[delivery.channels]]` entry (reused: a webhook keeps its pool)."""
    if config.kind == "webhook":
        from xworkmate.delivery.channels.webhook import WebhookChannel

        return WebhookChannel(
            name=config.name,
            url=config.url,
            secret=config.secret,
            connect_timeout=config.connect_timeout.total_seconds(),
            read_timeout=config.read_timeout.total_seconds(),
        )
    if config.kind == "openclaw":
        from xworkmate.delivery.channels.openclaw import OpenClawChannel

        return OpenClawChannel(
            name=config.name,
            binary=config.binary,
            sessions_index=config.sessions_index,
            timeout=config.read_timeout.total_seconds(),
        )
    from xworkmate.delivery.channels.record import RecordChannel

    return RecordChannel(name=config.name)
