"""The gateway app's settings section: keys, defaults, checks and a typed reader (D-K16).

Adding a gateway setting touches only this file: xworkmate.wiring hands the
section to the kernel's loader, which checks it with every other section.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings

from xworkmate.config import Config, Key, Section
from xworkmate.config.kernel import REQUEST_BODY_LIMIT
from xworkmate.config.keys import check_duration


@dataclass(frozen=True)
class GatewayConf:
    """[gateway]: request size and how long the task-run history is kept."""

    max_body_bytes: int
    run_history_retention: timedelta


SECTION: Section[GatewayConf] = Section(
    "gateway",
    GatewayConf,
    {
        "max_body_bytes": REQUEST_BODY_LIMIT,
        "run_history_retention": Key(
            timedelta(hours=720),
            check_duration,
            doc="how long task runs beyond a session's newest 32 stay in the history",
        ),
    },
)


def gateway_conf(config: Config | None = None) -> GatewayConf:
    """The section's values in ``config``, by default the running service's."""
    return SECTION.of(settings.XWORKMATE if config is None else config)
