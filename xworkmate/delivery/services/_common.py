"""What several outbox operations read: the channels' config, the retry rules, the error."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db.models import DateTimeField, F, Value
from django.db.models.functions import Greatest

from xworkmate.config import DeliveryChannel
from xworkmate.config.kernel import DELIVERY, unknown_cooldown
from xworkmate.delivery.channels.base import Channel
from xworkmate.delivery.channels.registry import build_channel
from xworkmate.delivery.policies import RetryRules
from xworkmate.lib.errors import InputError

DELIVER_TASK = "xworkmate.delivery.deliver"


class DeliveryError(InputError):
    """Bad input to the outbox; the message names the field and the rule."""


# --- configuration ---------------------------------------------------------------------


def channel_config(name: str) -> DeliveryChannel:
    for channel in settings.XWORKMATE.delivery_channels:
        if channel.name == name:
            return channel
    raise DeliveryError(f"channel: no channel named {name!r} in the config")


def _channel(name: str) -> Channel:
    return build_channel(channel_config(name))


def channel_deduplicates(name: str) -> bool:
    """Whether the channel's receiver de-duplicates by idempotency key (DeliveryError:
    no such channel in the config)."""
    return _channel(name).deduplicates


def retry_rules() -> RetryRules:
    config = settings.XWORKMATE
    return RetryRules(
        first=DELIVERY.of(config).retry_first,
        maximum=DELIVERY.of(config).retry_max,
        max_attempts=DELIVERY.of(config).max_attempts,
        unknown_cooldown=unknown_cooldown(config),
    )


def _is_pushed(channel_name: str) -> bool:
    return channel_config(channel_name).kind != "record"


def _not_before_creation(now: datetime) -> Greatest:
    # A row's updated_at never precedes its created_at (a check constraint), even
    # when `now` comes from a clock a little behind the one that created it.
    return Greatest(Value(now, output_field=DateTimeField()), F("created_at"))
