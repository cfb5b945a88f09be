"""The outbox's channels and routes in the file: [[delivery.channels]] and [delivery.routes]."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from xworkmate.config.kernel import (
    CHANNEL_KEYS,
    CHANNEL_SCHEMA,
    DEFAULT_SESSIONS_INDEX,
    DELIVERY_KINDS,
    DELIVERY_PURPOSES,
    RECORD_CHANNEL,
)
from xworkmate.config.keys import Key


@dataclass(frozen=True)
class DeliveryChannel:
    name: str
    kind: str
    url: str = ""
    secret: str = ""
    connect_timeout: timedelta = timedelta(seconds=5)
    read_timeout: timedelta = timedelta(seconds=10)
    binary: str = "openclaw"
    sessions_index: str = DEFAULT_SESSIONS_INDEX
    fallback: str = ""  # D-K33: where its messages go while its breaker is open


def check_table(
    where: str, item: object, schema: Mapping[str, Key], problems: list[str]
) -> dict[str, Any] | None:
    """Check one array-of-tables entry; return only the keys it sets, checked."""
    if not isinstance(item, dict):
        problems.append(f"{where}: must be a table")
        return None
    out: dict[str, Any] = {}
    for key, value in item.items():
        if key not in schema:
            problems.append(f"{where}.{key}: unknown key (known: {', '.join(schema)})")
            continue
        try:
            out[key] = schema[key].check(value)
        except ValueError as exc:
            problems.append(f"{where}.{key}: {exc}")
    return out


# Sub-tables read by their own builders, beside a section's plain keys.
TABLES_OF_SECTIONS = frozenset({("delivery", "channels"), ("delivery", "routes")})


def build_delivery(
    raw: object, problems: list[str]
) -> tuple[tuple[DeliveryChannel, ...], dict[str, str]]:
    """[[delivery.channels]] and [delivery.routes]; the built-in `record` channel always exists."""
    routes = dict.fromkeys(DELIVERY_PURPOSES, RECORD_CHANNEL)
    channels = [DeliveryChannel(name=RECORD_CHANNEL, kind="record")]
    if not isinstance(raw, dict):
        return tuple(channels), routes  # reported with the section's other keys
    items = raw.get("channels", [])
    if not isinstance(items, list):
        problems.append("delivery.channels: must be an array of tables ([[delivery.channels]])")
        items = []
    indexes: dict[str, int] = {}
    for index, item in enumerate(items):
        channel = _build_channel(f"delivery.channels[{index}]", item, channels, problems)
        if channel is not None:
            channels.append(channel)
            indexes[channel.name] = index
    names = {channel.name for channel in channels}
    # Channels declared but refused by their own checks: a route naming one is not a
    # second problem (the channel's own line says what is wrong with it).
    refused = {
        item["name"] for item in items
        if isinstance(item, dict) and isinstance(item.get("name"), str)
    } - names
    _check_fallbacks(channels, indexes, refused, problems)
    given = raw.get("routes", {})
    if not isinstance(given, dict):
        problems.append("delivery.routes: must be a table ([delivery.routes])")
        given = {}
    for purpose, channel_name in given.items():
        where = f"delivery.routes.{purpose}"
        if purpose not in DELIVERY_PURPOSES:
            problems.append(f"{where}: unknown purpose (known: {', '.join(DELIVERY_PURPOSES)})")
        elif isinstance(channel_name, str) and channel_name in refused:
            continue
        elif not isinstance(channel_name, str) or channel_name not in names:
            problems.append(
                f"{where}: no channel named {channel_name!r} (channels: {', '.join(sorted(names))})"
            )
        else:
            routes[purpose] = channel_name
    return tuple(channels), routes


def _build_channel(
    where: str, item: object, channels: list[DeliveryChannel], problems: list[str]
) -> DeliveryChannel | None:
    checked = check_table(where, item, CHANNEL_SCHEMA, problems)
    if checked is None or not isinstance(item, dict):
        return None
    for required in ("name", "kind"):
        if required not in item:
            problems.append(f"{where}.{required}: required")
    name, kind = checked.get("name"), checked.get("kind")
    if name is None or kind is None:
        return None
    if any(channel.name == name for channel in channels):
        problems.append(f"{where}.name: duplicate channel name {name!r}")
        return None
    if kind not in CHANNEL_KEYS:
        problems.append(f"{where}.kind: must be one of {', '.join(DELIVERY_KINDS)} (got {kind!r})")
        return None
    required_keys, optional_keys = CHANNEL_KEYS[kind]
    for key in required_keys:
        if key not in item:
            problems.append(f"{where}.{key}: required for a {kind} channel")
    for key in checked:
        if key not in ("name", "kind", *required_keys, *optional_keys):
            problems.append(f"{where}.{key}: not a key of a {kind} channel")
    if kind == "openclaw":
        _check_openclaw(where, checked, problems)
    if any(p.startswith(f"{where}.") for p in problems):
        return None
    return DeliveryChannel(**checked)


def _check_fallbacks(
    channels: list[DeliveryChannel],
    indexes: dict[str, int],
    refused: set[str],
    problems: list[str],
) -> None:
    """Each `fallback` names another channel, and following them never comes back (D-K33)."""
    names = {channel.name for channel in channels}
    fallbacks = {c.name: c.fallback for c in channels if c.fallback}
    for channel in channels:
        where = f"delivery.channels[{indexes.get(channel.name, 0)}].fallback"
        if not channel.fallback or channel.fallback in refused:
            continue
        if channel.fallback == channel.name:
            problems.append(f"{where}: must name another channel, not {channel.name!r} itself")
        elif channel.fallback not in names:
            problems.append(
                f"{where}: no channel named {channel.fallback!r} "
                f"(channels: {', '.join(sorted(names))})"
            )
        else:
            chain = [channel.name]
            step = channel.fallback
            while step in fallbacks and step not in chain:
                chain.append(step)
                step = fallbacks[step]
            if step in chain:
                loop = " -> ".join([*chain[chain.index(step):], step])
                problems.append(f"{where}: fallbacks must not form a cycle ({loop})")


def _check_openclaw(where: str, checked: dict[str, Any], problems: list[str]) -> None:
    """The binary must be runnable and the sessions index readable before the service starts."""
    binary = str(checked.get("binary", CHANNEL_SCHEMA["binary"].default))
    if shutil.which(os.path.expanduser(binary)) is None:
        problems.append(f"{where}.binary: no executable {binary!r} (on PATH or at that path)")
    index = os.path.expanduser(str(checked.get("sessions_index", DEFAULT_SESSIONS_INDEX)))
    try:
        with open(index, encoding="utf-8") as handle:
            parsed = json.load(handle)
    except (OSError, ValueError) as exc:
        problems.append(f"{where}.sessions_index: cannot read {index}: {exc}")
        return
    if not isinstance(parsed, dict):
        problems.append(f"{where}.sessions_index: {index} must hold a JSON object")
