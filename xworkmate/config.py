"""The declarative configuration: one TOML file, validated as a whole at start-up.

Where the file comes from: ``XWORKMATE_CONFIG`` when set (it must exist), else
``./xworkmate.toml`` when present, else the built-in defaults alone.

Where a value comes from, for every key: the file, then the environment
variable named in the schema (only URLs and secrets have one), then the
built-in default. One rule for all keys keeps it predictable, and it is the
order the artifact contract prescribes for the signing secret (D-A10).

Loading collects every problem before failing, one line per problem, each
naming the key (``artifacts.max_files: must be an integer >= 1 (got 0)``), so
an operator fixes a broken file in one pass and the service never starts half
configured. This module is framework-free: settings.py, the CLI and the tests
import it without Django being set up.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from xworkmate.beat_cron import beat_crontab
from xworkmate.lib.durations import DurationError, format_duration, parse_duration
from xworkmate.lib.openclaw import DEFAULT_MEDIA_DIR, DEFAULT_WORKSPACE
from xworkmate.lib.paging import MAX_LISTED_FILES
from xworkmate.lib.timezones import TimeZoneError, get_zone

CONFIG_ENV = "XWORKMATE_CONFIG"
HOME_ENV = "XWORKMATE_HOME"
DEFAULT_CONFIG_FILE = "xworkmate.toml"
DEFAULT_HOME = "var"
MASK = "********"

LANGUAGES = ("zh-hans", "en")
DATABASE_SCHEMES = ("sqlite", "postgres", "postgresql")
BROKER_SCHEMES = ("filesystem", "redis", "rediss", "amqp", "pyamqp")
DELIVERY_KINDS = ("record", "webhook", "openclaw")
# What the service sends, each routed to one channel by [delivery.routes].
DELIVERY_PURPOSES = ("plans.run", "longrun.progress", "longrun.resume", "longrun.recovery")
# The channel that needs no server: messages wait for the bridge to fetch them.
RECORD_CHANNEL = "record"
DEFAULT_SESSIONS_INDEX = "~/.openclaw/agents/main/sessions/sessions.json"

_JOB_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
_TASK_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")


class ConfigError(Exception):
    """The configuration cannot be used; ``problems`` has one line per key."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


# ---------------------------------------------------------------------------
# Value checkers: each takes the raw TOML value and returns the typed value or
# raises ValueError with the rule, worded to follow "<key>: ".


def _check_str(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"must be a string (got {_show(value)})")
    return value


def _check_nonempty_str(value: object) -> str:
    text = _check_str(value).strip()
    if not text:
        raise ValueError("must not be empty")
    return text


def _check_bool(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"must be true or false (got {_show(value)})")
    return value


def _int_at_least(minimum: int, maximum: int | None = None) -> Callable[[object], int]:
    def check(value: object) -> int:
        # bool is an int subclass in Python; `max_files = true` is a mistake.
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ValueError(f"must be an integer >= {minimum} (got {_show(value)})")
        if maximum is not None and value > maximum:
            raise ValueError(f"must be an integer <= {maximum} (got {_show(value)})")
        return value

    return check


def _check_duration(value: object) -> timedelta:
    try:
        return parse_duration(_check_str(value))
    except DurationError as exc:
        raise ValueError(str(exc)) from exc


def _check_time_zone(value: object) -> str:
    name = _check_str(value)
    try:
        return get_zone(name).key  # the canonical spelling ("asia/shanghai" reads as Asia/Shanghai)
    except TimeZoneError as exc:
        raise ValueError(str(exc)) from exc


def _check_language(value: object) -> str:
    text = _check_str(value).strip().lower()
    if text not in LANGUAGES:
        raise ValueError(f"must be one of {', '.join(LANGUAGES)} (got {_show(value)})")
    return text


def _check_str_list(value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ValueError(f"must be a list of non-empty strings (got {_show(value)})")
    return tuple(v.strip() for v in value)


def _check_nonempty_str_list(value: object) -> tuple[str, ...]:
    items = _check_str_list(value)
    if not items:
        raise ValueError("must list at least one entry")
    return items


def _url_checker(schemes: tuple[str, ...]) -> Callable[[object], str]:
    def check(value: object) -> str:
        text = _check_str(value).strip()
        if not text:  # empty means "the embedded default in the data home"
            return ""
        scheme = urlsplit(text).scheme
        if scheme not in schemes:
            allowed = ", ".join(s + "://" for s in schemes)
            raise ValueError(f"must be a URL with scheme {allowed} (got {scheme or text!r})")
        if scheme in ("postgres", "postgresql") and not urlsplit(text).path.strip("/"):
            raise ValueError("must name the database, like postgresql://user@host:5432/xworkmate")
        return text

    return check


def _check_http_url(value: object) -> str:
    text = _check_nonempty_str(value)
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"must be an http:// or https:// URL (got {text!r})")
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
    duration = _check_duration(value)
    if duration > MAX_LOGIN_COOLOFF:
        raise ValueError(
            f"must be at most {format_duration(MAX_LOGIN_COOLOFF)} (got {_show(value)})"
        )
    return duration


def _check_client_ip_header(value: object) -> str:
    text = _check_nonempty_str(value)
    if text != REMOTE_ADDR and not _HEADER_NAME_RE.match(text):
        raise ValueError(
            f"must be {REMOTE_ADDR} or an HTTP header name like X-Forwarded-For (got {text!r})"
        )
    return text


def _check_cron(value: object) -> str:
    text = _check_nonempty_str(value)
    # Celery beat runs these jobs, so its own parser is the judge of what it accepts.
    beat_crontab(text)
    return text


def _show(value: object) -> str:
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, int | float) else type(value).__name__


# ---------------------------------------------------------------------------
# The schema. Every key of the file is here, with its default; the example file
# and the tests are checked against this table.


@dataclass(frozen=True)
class Key:
    default: Any
    check: Callable[[object], Any]
    env: str | None = None
    secret: bool = False
    doc: str = ""


SCHEMA: dict[str, dict[str, Key]] = {
    "service": {
        "language_code": Key("zh-hans", _check_language, doc="admin language: zh-hans or en"),
        "time_zone": Key("Asia/Shanghai", _check_time_zone, doc="IANA zone for display and cron"),
        "allowed_hosts": Key(
            ("127.0.0.1", "localhost"), _check_nonempty_str_list, doc="Host headers served"
        ),
        "debug": Key(False, _check_bool, doc="Django debug pages; never in production"),
        "secret_key": Key(
            "", _check_str, env="SECRET_KEY", secret=True, doc="Django secret; generated if empty"
        ),
        "admin_username": Key("admin", _check_nonempty_str, doc="admin user created on first run"),
        "web_workers": Key(
            0,
            _int_at_least(0),
            doc="gunicorn workers of `make run`; 0 = 2 x CPUs + 1, at most 12",
        ),
    },
    # Admin sign-in throttling (D-K14).
    "admin": {
        "login_failure_limit": Key(
            5,
            _int_at_least(1),
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
    "database": {
        "url": Key(
            "",
            _url_checker(DATABASE_SCHEMES),
            env="DATABASE_URL",
            secret=True,
            doc="empty = SQLite file in the data home",
        ),
    },
    "broker": {
        "url": Key(
            "",
            _url_checker(BROKER_SCHEMES),
            env="CELERY_BROKER_URL",
            secret=True,
            doc="empty = file-based broker in the data home",
        ),
    },
    "gateway": {
        "max_body_bytes": Key(1048576, _int_at_least(1024), doc="largest accepted request body"),
        "run_history_retention": Key(
            timedelta(hours=720),
            _check_duration,
            doc="how long task runs beyond a session's newest 32 stay in the history",
        ),
    },
    "workspace": {
        "roots": Key(
            (DEFAULT_WORKSPACE,),
            _check_nonempty_str_list,
            doc="allowed workspace roots; the first is the default workspace",
        ),
    },
    "artifacts": {
        "max_files": Key(
            64, _int_at_least(1, MAX_LISTED_FILES), doc="default maxFiles of export (D-K13)"
        ),
        "max_inline_bytes": Key(10485760, _int_at_least(0), doc="default maxInlineBytes"),
        "snapshot_max_files": Key(
            64, _int_at_least(1, MAX_LISTED_FILES), doc="default maxFiles of snapshots (D-K13)"
        ),
        "ref_signing_secret": Key(
            "",
            _check_str,
            env="XWORKMATE_ARTIFACT_REF_SIGNING_SECRET",
            secret=True,
            doc="HMAC secret for artifactRef; generated once in the data home if empty",
        ),
        "scan_shared_media_roots": Key(
            False, _check_bool, doc="collect-and-snapshot may scan the shared media roots (D-A2)"
        ),
        "openclaw_media_dir": Key(
            DEFAULT_MEDIA_DIR, _check_nonempty_str, doc="shared media"
        ),
        "openclaw_tmp_dir": Key("", _check_str, doc="empty = <system tmp>/openclaw"),
        "max_inline_total_bytes": Key(
            33554432, _int_at_least(0), doc="inlined bytes per answer, all files together"
        ),
        "hash_budget": Key(
            timedelta(seconds=10),
            _check_duration,
            doc="time one request may spend hashing files not hashed before",
        ),
    },
    "plans": {
        "workspace": Key(
            "", _check_str, doc="workspace of archives/<ARCHIVE_ID>/PLAN.md; empty = the first"
        ),
        "time_zone": Key("Asia/Shanghai", _check_time_zone, doc="zone of schedules without tz"),
        "min_every": Key(
            timedelta(seconds=1), _check_duration, doc="smallest everyMs a schedule may use"
        ),
        "confirmation_phrases": Key(
            (
                "确认",
                "确认创建",
                "确认执行",
                "可以创建定时任务了",
                "按这个建 Cron",
                "按这个建Cron",
                "同意",
                "就这样",
            ),
            _check_nonempty_str_list,
            doc="messages that confirm a PLAN.md revision",
        ),
    },
    "delivery": {
        "max_body_bytes": Key(65536, _int_at_least(1), doc="largest message body (UTF-8 bytes)"),
        "retry_first": Key(
            timedelta(seconds=30), _check_duration, doc="wait before retrying a failed send"
        ),
        "retry_max": Key(
            timedelta(hours=1), _check_duration, doc="the longest wait between retries (doubling)"
        ),
        "max_attempts": Key(
            10, _int_at_least(1), doc="sends of one message before it stays failed"
        ),
        "dispatch_grace": Key(
            timedelta(seconds=30),
            _check_duration,
            doc="how long a queued send may take to start before the dispatch job sends it",
        ),
        "batch_size": Key(
            50,
            _int_at_least(1),
            doc="messages one worker claims, sends and records together",
        ),
    },
    "longrun": {
        "trigger_phrases": Key(
            ("长任务模式", "进入长任务模式"),
            _check_nonempty_str_list,
            doc="phrases that enter long-run mode",
        ),
        "progress_every": Key(
            timedelta(minutes=3), _check_duration, doc="visible progress cadence"
        ),
        "idle": Key(timedelta(seconds=60), _check_duration, doc="keepalive idle threshold"),
        "stale": Key(timedelta(minutes=10), _check_duration, doc="watchdog stale window"),
        "unknown_cooldown": Key(
            timedelta(minutes=2), _check_duration, doc="wait before resending an unknown delivery"
        ),
        "blocked_after_failures": Key(
            3, _int_at_least(1), doc="undelivered heartbeats before a task turns blocked"
        ),
        "auto_resume": Key(
            False,
            _check_bool,
            doc="keepalive queues resume messages (else it only plans them)",
        ),
        "time_zone": Key(
            "Asia/Shanghai", _check_time_zone, doc="zone of times without offset and of output"
        ),
        "archive_after": Key(
            timedelta(days=7),
            _check_duration,
            doc="cleanup archives done, blocked and handoff tasks older than this (D-B16)",
        ),
        "max_live_tasks_per_session": Key(
            20,
            _int_at_least(1),
            doc="tasks not done one session key may have; registering another is refused (D-B26)",
        ),
    },
}

CHANNEL_SCHEMA: dict[str, Key] = {
    "name": Key(None, _check_nonempty_str),
    "kind": Key(None, _check_nonempty_str),
    # webhook
    "url": Key("", _check_http_url),
    "secret": Key("", _check_str, secret=True),
    "connect_timeout": Key(timedelta(seconds=5), _check_duration),
    "read_timeout": Key(timedelta(seconds=10), _check_duration),
    # openclaw (read_timeout bounds the process too)
    "binary": Key("openclaw", _check_nonempty_str),
    "sessions_index": Key(DEFAULT_SESSIONS_INDEX, _check_nonempty_str),
}
# Which keys each kind takes (beyond name and kind); required ones first.
CHANNEL_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "record": ((), ()),
    "webhook": (("url",), ("secret", "connect_timeout", "read_timeout")),
    "openclaw": ((), ("binary", "sessions_index", "read_timeout")),
}

JOB_SCHEMA: dict[str, Key] = {
    "name": Key(None, _check_nonempty_str),
    "task": Key(None, _check_nonempty_str),
    "every": Key(None, _check_duration),
    "cron": Key(None, _check_cron),
    "enabled": Key(True, _check_bool),
}



# ---------------------------------------------------------------------------
# The typed result.


@dataclass(frozen=True)
class PeriodicJob:
    name: str
    task: str
    every: timedelta | None
    cron: str | None
    enabled: bool

    @property
    def schedule_text(self) -> str:
        return f"every {format_duration(self.every)}" if self.every else f"cron {self.cron}"


@dataclass(frozen=True)
class JobEntry:
    """One `[[periodic_jobs]]` table of the file: only the keys it sets, each checked.

    The apps declare their default jobs when they start (xworkmate.periodic); an
    entry with the same name overrides the fields it sets (`enabled = false`
    turns a job off), a new name adds a job (D-K5). `merge_jobs` applies them.
    """

    name: str
    fields: Mapping[str, Any]
    sets_schedule: bool  # `every` or `cron` given: it replaces the default's schedule


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


@dataclass(frozen=True)
class Config:
    """Everything the service reads from its configuration, typed and checked."""

    source: str  # the file read, or "built-in defaults"
    home: Path
    values: Mapping[str, Mapping[str, Any]]
    delivery_channels: tuple[DeliveryChannel, ...] = ()
    # purpose -> channel name; every purpose of DELIVERY_PURPOSES has one.
    delivery_routes: Mapping[str, str] = field(
        default_factory=lambda: dict.fromkeys(DELIVERY_PURPOSES, RECORD_CHANNEL)
    )
    job_entries: tuple[JobEntry, ...] = ()
    from_env: frozenset[str] = field(default_factory=frozenset)

    def get(self, section: str, key: str) -> Any:
        return self.values[section][key]

    @property
    def database_url(self) -> str:
        url: str = self.get("database", "url")
        return url or f"sqlite:///{self.home / 'xworkmate.sqlite3'}"

    @property
    def broker_url(self) -> str:
        url: str = self.get("broker", "url")
        return url or "filesystem://"

    @property
    def broker_folder(self) -> Path:
        """Where the file-based broker keeps its messages (embedded mode only)."""
        path = urlsplit(self.broker_url).path
        return Path(path) if path not in ("", "/") else self.home / "broker"

    @property
    def workspace_roots(self) -> tuple[str, ...]:
        roots: tuple[str, ...] = self.get("workspace", "roots")
        return roots

    @property
    def plans_workspace(self) -> Path:
        """The agent workspace whose archives/<ARCHIVE_ID>/PLAN.md the plans app keeps.

        The path inside it is the protocol's (§3.1), so a job's first instruction
        (`从路径 archives/<ARCHIVE_ID>/PLAN.md …`) names the file the agent reads.
        """
        root: str = self.get("plans", "workspace") or self.workspace_roots[0]
        return Path(root).expanduser()


def resolve_config_path(env: Mapping[str, str], cwd: Path) -> Path | None:
    """The file to read: XWORKMATE_CONFIG, else ./xworkmate.toml if present, else none."""
    explicit = env.get(CONFIG_ENV, "").strip()
    if explicit:
        return Path(explicit).expanduser()
    candidate = cwd / DEFAULT_CONFIG_FILE
    return candidate if candidate.is_file() else None


def resolve_home(env: Mapping[str, str], cwd: Path) -> Path:
    raw = env.get(HOME_ENV, "").strip() or DEFAULT_HOME
    home = Path(raw).expanduser()
    return (home if home.is_absolute() else cwd / home).resolve()


def load_config(
    path: Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Config:
    """Read, validate and type the configuration; raise ConfigError listing every problem."""
    env = os.environ if env is None else env
    cwd = Path.cwd() if cwd is None else cwd
    if path is None:
        path = resolve_config_path(env, cwd)
    raw: dict[str, Any] = {}
    source = "built-in defaults"
    if path is not None:
        source = str(path)
        raw = _read_toml(path)
    return _build(raw, source=source, env=env, home=resolve_home(env, cwd))


def parse_config_text(text: str, *, env: Mapping[str, str] | None = None, home: Path) -> Config:
    """Validate TOML given as text (used by tests and ``config --check -``)."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([f"<text>: not valid TOML: {exc}"]) from exc
    return _build(raw, source="<text>", env={} if env is None else env, home=home)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError as exc:
        raise ConfigError([f"{CONFIG_ENV}: config file not found: {path}"]) from exc
    except OSError as exc:
        raise ConfigError([f"{path}: cannot read config file: {exc.strerror}"]) from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([f"{path}: not valid TOML: {exc}"]) from exc


def _build(raw: dict[str, Any], *, source: str, env: Mapping[str, str], home: Path) -> Config:
    problems: list[str] = []
    values: dict[str, dict[str, Any]] = {}
    from_env: set[str] = set()
    known_sections = {*SCHEMA, "periodic_jobs"}
    for section in raw:
        if section not in known_sections:
            problems.append(
                f"{section}: unknown section (known: {', '.join(sorted(known_sections))})"
            )
    for section, keys in SCHEMA.items():
        given = raw.get(section, {})
        if not isinstance(given, dict):
            problems.append(f"{section}: must be a table ([{section}])")
            given = {}
        for key in given:
            if key not in keys and (section, key) not in _TABLES_OF_SECTIONS:
                problems.append(f"{section}.{key}: unknown key (known: {', '.join(keys)})")
        values[section] = {}
        for key, spec in keys.items():
            name = f"{section}.{key}"
            if key in given:
                value: object = given[key]
            elif spec.env and env.get(spec.env, "").strip():
                value = env[spec.env].strip()
                from_env.add(name)
            else:
                values[section][key] = spec.default
                continue
            try:
                values[section][key] = spec.check(value)
            except ValueError as exc:
                where = f"{name} (from {spec.env})" if name in from_env else name
                problems.append(f"{where}: {exc}")
    channels, routes = _build_delivery(raw.get("delivery", {}), problems)
    jobs = _build_jobs(raw.get("periodic_jobs", []), problems)
    if problems:
        raise ConfigError([f"{source}: {p}" for p in problems])
    return Config(
        source=source,
        home=home,
        values=values,
        delivery_channels=channels,
        delivery_routes=routes,
        job_entries=jobs,
        from_env=frozenset(from_env),
    )


def _check_table(
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
_TABLES_OF_SECTIONS = frozenset({("delivery", "channels"), ("delivery", "routes")})


def _build_delivery(
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
    for index, item in enumerate(items):
        channel = _build_channel(f"delivery.channels[{index}]", item, channels, problems)
        if channel is not None:
            channels.append(channel)
    names = {channel.name for channel in channels}
    given = raw.get("routes", {})
    if not isinstance(given, dict):
        problems.append("delivery.routes: must be a table ([delivery.routes])")
        given = {}
    for purpose, channel_name in given.items():
        where = f"delivery.routes.{purpose}"
        if purpose not in DELIVERY_PURPOSES:
            problems.append(f"{where}: unknown purpose (known: {', '.join(DELIVERY_PURPOSES)})")
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
    checked = _check_table(where, item, CHANNEL_SCHEMA, problems)
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


def _build_jobs(raw: object, problems: list[str]) -> tuple[JobEntry, ...]:
    if not isinstance(raw, list):
        problems.append("periodic_jobs: must be an array of tables ([[periodic_jobs]])")
        return ()
    entries: dict[str, JobEntry] = {}
    for index, item in enumerate(raw):
        where = f"periodic_jobs[{index}]"
        checked = _check_table(where, item, JOB_SCHEMA, problems)
        if checked is None:
            continue
        name = checked.get("name")
        if name is None:
            if "name" not in item:
                problems.append(f"{where}.name: required")
            continue
        if not _JOB_NAME_RE.match(name):
            problems.append(
                f"{where}.name: must be lowercase letters, digits, '.', '_' or '-' (got {name!r})"
            )
            continue
        if name in entries:
            problems.append(f"{where}.name: duplicate job name {name!r}")
            continue
        fields = {k: v for k, v in checked.items() if k != "name"}
        entries[name] = JobEntry(name, fields, "every" in item or "cron" in item)
    return tuple(entries.values())


def merge_jobs(
    defaults: Iterable[PeriodicJob], entries: Iterable[JobEntry], *, source: str
) -> tuple[PeriodicJob, ...]:
    """The jobs beat runs: the apps' defaults with the file's entries applied (D-K5).

    Raises ConfigError naming each job that ends up without a task or without
    exactly one of every / cron.
    """
    jobs: dict[str, dict[str, Any]] = {
        job.name: {"task": job.task, "every": job.every, "cron": job.cron, "enabled": job.enabled}
        for job in defaults
    }
    for entry in entries:
        base = jobs.get(entry.name, {"every": None, "cron": None})
        if entry.sets_schedule:
            # Setting one schedule kind replaces the other one of a default job.
            base = base | {"every": None, "cron": None}
        jobs[entry.name] = {"enabled": True} | base | dict(entry.fields)
    problems: list[str] = []
    result: list[PeriodicJob] = []
    for name, spec in jobs.items():
        where = f"periodic_jobs[{name}]"
        if "task" not in spec:
            problems.append(f"{where}.task: required")
            continue
        if not _TASK_NAME_RE.match(spec["task"]):
            problems.append(
                f"{where}.task: must be a dotted Celery task name (got {spec['task']!r})"
            )
            continue
        if (spec["every"] is None) == (spec["cron"] is None):
            problems.append(f"{where}: set exactly one of every or cron")
            continue
        result.append(PeriodicJob(name=name, **spec))
    if problems:
        raise ConfigError([f"{source}: {p}" for p in problems])
    return tuple(result)


# ---------------------------------------------------------------------------
# Showing the effective configuration.


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
    config: Config, jobs: Iterable[PeriodicJob], *, mask_secrets: bool = True
) -> dict[str, Any]:
    """The configuration as plain data, secrets masked, with where each came from.

    `jobs` are the merged periodic jobs (merge_jobs), which need the apps' defaults.
    """
    out: dict[str, Any] = {"source": config.source, "home": str(config.home)}
    for section, keys in SCHEMA.items():
        out[section] = {}
        for key, spec in keys.items():
            value = config.get(section, key)
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
    return out
