"""The kernel's own settings sections: service, admin, database, broker, delivery.

[workspace] has a module of its own (xworkmate.config.workspace).

The apps declare theirs in their ``conf.py`` (D-K16); xworkmate.wiring puts all of
them in the order the file and ``config --show`` list them.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from xworkmate.beat_cron import beat_crontab
from xworkmate.config.keys import (
    Key,
    check_bool,
    check_duration,
    check_http_url,
    check_nonempty_str,
    check_nonempty_str_list,
    check_str,
    check_time_zone,
    int_at_least,
    show_value,
    url_checker,
)
from xworkmate.config.section import Section
from xworkmate.lib.durations import format_duration

if TYPE_CHECKING:
    from xworkmate.config.load import Config

LANGUAGES = ("zh-hans", "en")
DATABASE_SCHEMES = ("sqlite", "postgres", "postgresql")
BROKER_SCHEMES = ("filesystem", "redis", "rediss", "amqp", "pyamqp")
DELIVERY_KINDS = ("record", "webhook", "openclaw")
# What the service sends, each routed to one channel by [delivery.routes].
DELIVERY_PURPOSES = (
    "plans.run",
    "longrun.progress",
    "longrun.resume",
    "longrun.recovery",
    # A person told that a long task needs them (the escalation ladder's last rung, D-B30).
    "longrun.escalation",
)
# The outbox's own notices (a channel's circuit breaker opened or closed, D-K33): sent on
# the channel's fallback, never through a route, so [delivery.routes] does not take it.
BREAKER_PURPOSE = "delivery.breaker"
# The channel that needs no server: messages wait for the bridge to fetch them.
RECORD_CHANNEL = "record"
DEFAULT_SESSIONS_INDEX = "~/.openclaw/agents/main/sessions/sessions.json"



def _check_language(value: object) -> str:
    text = check_str(value).strip().lower()
    if text not in LANGUAGES:
        raise ValueError(f"must be one of {', '.join(LANGUAGES)} (got {show_value(value)})")
    return text



# The longest admin sign-in lock: long enough for any policy, far from what a
# date minus the cool-off could overflow.
MAX_LOGIN_COOLOFF = timedelta(days=30)
# An HTTP header name as a reverse proxy sends it. Underscores are refused:
# servers drop or merge such headers, and Django files `X-Real_IP` and
# `X-Real-IP` under one request.META key, so a client could supply one.
_HEADER_NAME_RE = re.compile(r"^[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*$")
REMOTE_ADDR = "REMOTE_ADDR"


def _check_login_cooloff(value: object) -> timedelta:
    duration = check_duration(value)
    if duration > MAX_LOGIN_COOLOFF:
        raise ValueError(
            f"must be at most {format_duration(MAX_LOGIN_COOLOFF)} (got {show_value(value)})"
        )
    return duration


def _check_client_ip_header(value: object) -> str:
    text = check_nonempty_str(value)
    if text != REMOTE_ADDR and not _HEADER_NAME_RE.match(text):
        raise ValueError(
            f"must be {REMOTE_ADDR} or an HTTP header name like X-Forwarded-For (got {text!r})"
        )
    return text


def _check_beat_lease(value: object) -> timedelta:
    # Renewed every third of the period: a few seconds at least, so one slow
    # renewal does not hand the lease over.
    duration = check_duration(value)
    if duration < timedelta(seconds=6):
        raise ValueError(f"must be at least 6s (got {show_value(value)})")
    return duration


LOG_FORMATS = ("text", "json")


def _check_log_format(value: object) -> str:
    text = check_str(value).strip().lower()
    if text not in LOG_FORMATS:
        raise ValueError(f"must be one of {', '.join(LOG_FORMATS)} (got {show_value(value)})")
    return text


def _check_networks(value: object) -> tuple[str, ...]:
    # Each entry a CIDR (or one address); stored normalised (`10.0.0.0/8`), so
    # the metrics view parses them without failing (D-K26).
    if not isinstance(value, list):
        raise ValueError(f"must be a list of networks like 10.0.0.0/8 (got {show_value(value)})")
    out: list[str] = []
    for entry in value:
        if not isinstance(entry, str):
            raise ValueError(
                f"must be a list of networks like 10.0.0.0/8 (got {show_value(entry)})"
            )
        try:
            out.append(str(ipaddress.ip_network(entry.strip(), strict=False)))
        except ValueError:
            raise ValueError(f"{entry!r} is not a network like 10.0.0.0/8") from None
    return tuple(out)


def _check_cron(value: object) -> str:
    text = check_nonempty_str(value)
    # Celery beat runs these jobs, so its own parser is the judge of what it accepts.
    beat_crontab(text)
    return text


# Keys the kernel's facilities read whose place in the file is an app's section:
# their place there predates the kernel split, and the file's shape is the
# operator's. The kernel owns each key (default, check, meaning); the app's
# conf.py puts it in its table; Config.read finds it wherever it sits.
REQUEST_BODY_LIMIT = Key(1048576, int_at_least(1024), doc="largest accepted request body")
UNKNOWN_COOLDOWN = Key(
    timedelta(minutes=2), check_duration, doc="wait before resending an unknown delivery"
)


def request_body_limit(config: Config) -> int:
    """The largest JSON body any API view accepts ([gateway] max_body_bytes)."""
    return int(config.read(REQUEST_BODY_LIMIT))


def unknown_cooldown(config: Config) -> timedelta:
    """How long the outbox leaves a send without an outcome before it may send the
    message again, on every channel ([longrun] unknown_cooldown)."""
    value: timedelta = config.read(UNKNOWN_COOLDOWN)
    return value


@dataclass(frozen=True)
class ServiceConf:
    """[service]: the web service itself."""

    language_code: str
    time_zone: str
    allowed_hosts: tuple[str, ...]
    debug: bool
    secret_key: str
    admin_username: str
    web_workers: int
    beat_lease: timedelta
    metrics_networks: tuple[str, ...]
    log_format: str


SERVICE = Section(
    "service",
    ServiceConf,
    {
        "language_code": Key("zh-hans", _check_language, doc="admin language: zh-hans or en"),
        "time_zone": Key("Asia/Shanghai", check_time_zone, doc="IANA zone for display and cron"),
        "allowed_hosts": Key(
            ("127.0.0.1", "localhost"), check_nonempty_str_list, doc="Host headers served"
        ),
        "debug": Key(False, check_bool, doc="Django debug pages; never in production"),
        "secret_key": Key(
            "", check_str, env="SECRET_KEY", secret=True, doc="Django secret; generated if empty"
        ),
        "admin_username": Key("admin", check_nonempty_str, doc="admin user created on first run"),
        "web_workers": Key(
            0,
            int_at_least(0),
            doc="gunicorn workers of `make run`; 0 = 2 x CPUs + 1, at most 12",
        ),
        "beat_lease": Key(
            timedelta(seconds=30),
            _check_beat_lease,
            doc="how long a beat holds the lease it renews; another beat takes over after it",
        ),
        "metrics_networks": Key(
            (),
            _check_networks,
            doc="client networks (CIDRs) that may read /metrics without a metrics:read key",
        ),
        "log_format": Key(
            "text", _check_log_format, doc="log lines as text or one JSON object each"
        ),
    },
)


@dataclass(frozen=True)
class AdminConf:
    """[admin]: admin sign-in throttling (D-K14)."""

    login_failure_limit: int
    login_cooloff: timedelta
    client_ip_header: str


ADMIN = Section(
    "admin",
    AdminConf,
    {
        "login_failure_limit": Key(
            5,
            int_at_least(1),
            doc="failed admin sign-ins of one username from one address before both are locked",
        ),
        "login_cooloff": Key(
            timedelta(minutes=15), _check_login_cooloff, doc="how long such a lock lasts"
        ),
        "client_ip_header": Key(
            REMOTE_ADDR,
            _check_client_ip_header,
            doc="where the client's address is read: REMOTE_ADDR, or a reverse proxy's header",
        ),
    },
)


@dataclass(frozen=True)
class DatabaseConf:
    """[database]: empty url = the SQLite file in the data home."""

    url: str


DATABASE = Section(
    "database",
    DatabaseConf,
    {
        "url": Key(
            "",
            url_checker(DATABASE_SCHEMES),
            env="DATABASE_URL",
            secret=True,
            doc="empty = SQLite file in the data home",
        ),
    },
)


@dataclass(frozen=True)
class BrokerConf:
    """[broker]: empty url = the file-based broker in the data home."""

    url: str


BROKER = Section(
    "broker",
    BrokerConf,
    {
        "url": Key(
            "",
            url_checker(BROKER_SCHEMES),
            env="CELERY_BROKER_URL",
            secret=True,
            doc="empty = file-based broker in the data home",
        ),
    },
)


@dataclass(frozen=True)
class DeliveryConf:
    """[delivery]: the outbox's limits and retry policy; channels and routes are read apart."""

    max_body_bytes: int
    retry_first: timedelta
    retry_max: timedelta
    max_attempts: int
    dispatch_grace: timedelta
    batch_size: int
    sends_in_flight: int
    breaker_failures: int
    breaker_cooldown: timedelta


DELIVERY = Section(
    "delivery",
    DeliveryConf,
    {
        "max_body_bytes": Key(65536, int_at_least(1), doc="largest message body (UTF-8 bytes)"),
        "retry_first": Key(
            timedelta(seconds=30), check_duration, doc="wait before retrying a failed send"
        ),
        "retry_max": Key(
            timedelta(hours=1), check_duration, doc="the longest wait between retries (doubling)"
        ),
        "max_attempts": Key(
            10, int_at_least(1), doc="sends of one message before it stays failed"
        ),
        "dispatch_grace": Key(
            timedelta(seconds=30),
            check_duration,
            doc="how long a queued send may take to start before the dispatch job sends it",
        ),
        # D-K32: 100 and 16, so one worker on a backlog pays a step's transaction for
        # ~7 messages and a claim for 100 (50 and 8 cost it ~22% more CPU a message).
        "batch_size": Key(
            100,
            int_at_least(1),
            doc="messages one worker claims for a batch",
        ),
        "sends_in_flight": Key(
            32,  # D-K41
            int_at_least(1, 64),
            doc="sends a batch keeps begun and unanswered at once (never two for one session)",
        ),
        # D-K33: the channel's circuit breaker.
        "breaker_failures": Key(
            5,
            int_at_least(1),
            doc="consecutive failed sends on a channel before its circuit breaker opens",
        ),
        "breaker_cooldown": Key(
            timedelta(minutes=5),
            check_duration,
            doc="how long an open breaker waits before one probe send to its channel",
        ),
    },
)


CHANNEL_SCHEMA: dict[str, Key] = {
    "name": Key(None, check_nonempty_str),
    "kind": Key(None, check_nonempty_str),
    # webhook
    "url": Key("", check_http_url),
    "secret": Key("", check_str, secret=True),
    "connect_timeout": Key(timedelta(seconds=5), check_duration),
    "read_timeout": Key(timedelta(seconds=10), check_duration),
    # openclaw (read_timeout bounds the process too)
    "binary": Key("openclaw", check_nonempty_str),
    "sessions_index": Key(DEFAULT_SESSIONS_INDEX, check_nonempty_str),
    # where this channel's messages go while its circuit breaker is open (D-K33)
    "fallback": Key("", check_nonempty_str),
}
# Which keys each kind takes (beyond name and kind); required ones first.
CHANNEL_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "record": ((), ()),
    "webhook": (("url",), ("secret", "connect_timeout", "read_timeout", "fallback")),
    "openclaw": ((), ("binary", "sessions_index", "read_timeout", "fallback")),
}

JOB_SCHEMA: dict[str, Key] = {
    "name": Key(None, check_nonempty_str),
    "task": Key(None, check_nonempty_str),
    "every": Key(None, check_duration),
    "cron": Key(None, _check_cron),
    "enabled": Key(True, check_bool),
}



