"""Showing the effective configuration: plain data, secrets masked, with where each came from."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from xworkmate.config.channels import DeliveryChannel
from xworkmate.config.kernel import CHANNEL_KEYS
from xworkmate.config.load import Config, PeriodicJob
from xworkmate.lib.durations import format_duration

MASK = "********"


def mask_url(url: str) -> str:
    """Hide the password of a URL, keep the rest readable."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", f":{MASK}@", 1)
    return parts._replace(netloc=netloc).geturl()


def _channel_shown(channel: DeliveryChannel, *, mask_secrets: bool) -> dict[str, Any]:
    required, optional = CHANNEL_KEYS[channel.kind]
    shown: dict[str, Any] = {"name": channel.name, "kind": channel.kind}
    for key in (*required, *optional):
        value = getattr(channel, key)
        if isinstance(value, timedelta):
            value = format_duration(value)
        if key == "secret" and value and mask_secrets:
            value = MASK
        shown[key] = value
    return shown


def effective_config(
    config: Config,
    jobs: Iterable[PeriodicJob],
    *,
    mask_secrets: bool = True,
) -> dict[str, Any]:
    """The configuration as plain data, secrets masked, with where each came from.

    `jobs` are the merged periodic jobs (merge_jobs), which need the apps' defaults.
    """
    out: dict[str, Any] = {"source": config.source, "home": str(config.home)}
    for declared in config.declared:
        section = declared.name
        out[section] = {}
        for key, spec in declared.keys.items():
            value = config.value(section, key)
            if isinstance(value, timedelta):
                value = format_duration(value)
            elif isinstance(value, tuple):
                value = list(value)
            if spec.secret and mask_secrets and value:
                value = mask_url(value) if section in ("database", "broker") else MASK
            out[section][key] = value
    out["database"]["effective_url"] = (
        mask_url(config.database_url) if mask_secrets else config.database_url
    )
    out["broker"]["effective_url"] = (
        mask_url(config.broker_url) if mask_secrets else config.broker_url
    )
    out["delivery"] = {
        **out.get("delivery", {}),
        "channels": [
            _channel_shown(channel, mask_secrets=mask_secrets)
            for channel in config.delivery_channels
        ],
        "routes": dict(config.delivery_routes),
    }
    out["periodic_jobs"] = [
        {"name": j.name, "task": j.task, "schedule": j.schedule_text, "enabled": j.enabled}
        for j in jobs
    ]
    out["from_environment"] = sorted(config.from_env)
    out["sources"] = {
        f"{declared.name}.{key}": config.source_of(f"{declared.name}.{key}")
        for declared in config.declared
        for key in declared.keys
    }
    return out
