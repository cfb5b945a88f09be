"""The kernel's [workspace] section: the agent workspaces the service may read (D-A9),
and which host's disk holds each (D-K31).

Apart from xworkmate.config.kernel because its keys are checked together with the
broker's (a root on another host needs a broker every host reaches).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from xworkmate.config.keys import (
    Key,
    check_duration,
    check_nonempty_str_list,
    check_str,
    show_value,
)
from xworkmate.config.section import Section
from xworkmate.lib.openclaw import DEFAULT_WORKSPACE


@dataclass(frozen=True)
class WorkspaceConf:
    """[workspace]: the agent workspaces the service may read (D-A9), and which host
    holds each (D-K31)."""

    roots: tuple[str, ...]
    # root (as written in `roots`) -> the name of the host whose disk holds it;
    # a root not named here is on a disk every process of the service reaches.
    hosts: Mapping[str, str]
    this_host: str
    host_wait: timedelta


# A host name as it appears in a queue name (`files@<host>`) and in messages.
_HOST_NAME_RE = re.compile(r"^[a-z0-9](?:[a-z0-9.-]{0,61}[a-z0-9])?$")
_HOST_NAME_RULE = "a host name: lowercase letters, digits, '.' and '-', at most 63"


def _check_host_name(value: object) -> str:
    text = check_str(value).strip()
    if not _HOST_NAME_RE.match(text):
        raise ValueError(f"must be {_HOST_NAME_RULE} (got {show_value(value)})")
    return text


def _check_this_host(value: object) -> str:
    return "" if check_str(value).strip() == "" else _check_host_name(value)


def _check_hosts(value: object) -> Mapping[str, str]:
    if not isinstance(value, dict):
        raise ValueError(
            f"must be a table of workspace root = host name (got {show_value(value)})"
        )
    hosts: dict[str, str] = {}
    for root, host in value.items():
        try:
            hosts[root.strip()] = _check_host_name(host)
        except ValueError as exc:
            raise ValueError(f"{root!r}: {exc}") from None
    return hosts


def workspace_problems(workspace: Mapping[str, Any], broker_url: str) -> list[str]:
    """What [workspace] breaks across its keys and the broker (D-K31), one line each.

    `workspace` holds the keys that passed their own checks (a failed one is absent).
    """
    hosts: Mapping[str, str] = workspace.get("hosts") or {}
    roots: tuple[str, ...] = workspace.get("roots") or ()
    problems = [
        f"workspace.hosts: {root!r} is not one of workspace.roots ({', '.join(roots)})"
        for root in hosts
        if roots and root not in roots  # no roots: their own check has said why
    ]
    if hosts and (broker_url or "filesystem://").startswith("filesystem://"):
        problems.append(
            "workspace.hosts: a workspace on another host needs a broker every host reaches "
            "(set broker.url to Redis or RabbitMQ); the embedded file broker serves one machine"
        )
    return problems


WORKSPACE = Section(
    "workspace",
    WorkspaceConf,
    {
        "roots": Key(
            (DEFAULT_WORKSPACE,),
            check_nonempty_str_list,
            doc="allowed workspace roots; the first is the default workspace",
        ),
        "hosts": Key(
            {},
            _check_hosts,
            doc="[workspace.hosts]: root = host name, for a root on another host's disk "
            "(its file work runs on the worker of queue files@<host>)",
        ),
        "this_host": Key(
            "",
            _check_this_host,
            env="XWORKMATE_HOST",
            doc="the host this process runs on, as [workspace.hosts] names it; "
            "empty = the host of the roots not named there",
        ),
        "host_wait": Key(
            timedelta(seconds=10),
            check_duration,
            doc="how long a request waits for another host's files worker",
        ),
    },
)
