"""Loading the configuration: one TOML file, validated as a whole at start-up.

Where the file comes from: ``XWORKMATE_CONFIG`` when set (it must exist), else
``./xworkmate.toml`` when present, else the built-in defaults alone.

Where a value comes from, for every key: the file, then the environment
variable named in the key (only URLs and secrets have one), then the
built-in default. One rule for all keys keeps it predictable, and it is the
order the artifact contract prescribes for the signing secret (D-A10).

Loading collects every problem before failing, one line per problem, each
naming the key, so an operator fixes a broken file in one pass and the service
never starts half configured. The sections are the kernel's and the apps'
(xworkmate.wiring, D-K16); this module knows none of the apps' keys. It needs no
Django set up (settings.py loads it to make the settings); of the frameworks only
Celery's crontab parser is imported, which judges a periodic job's `cron`.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from xworkmate.config.channels import (
    TABLES_OF_SECTIONS,
    DeliveryChannel,
    build_delivery,
    check_table,
)
from xworkmate.config.kernel import (
    BROKER,
    DATABASE,
    DELIVERY_PURPOSES,
    JOB_SCHEMA,
    RECORD_CHANNEL,
)
from xworkmate.config.keys import ConfigError, Key
from xworkmate.config.section import Section
from xworkmate.config.workspace import WORKSPACE, workspace_problems
from xworkmate.lib.durations import format_duration

CONFIG_ENV = "XWORKMATE_CONFIG"
HOME_ENV = "XWORKMATE_HOME"
DEFAULT_CONFIG_FILE = "xworkmate.toml"
DEFAULT_HOME = "var"

_JOB_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
_TASK_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")

Sections = Sequence[Section[Any]]


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
class Config:
    """Everything the service reads from its configuration, typed and checked."""

    source: str  # the file read, or "built-in defaults"
    home: Path
    # section name -> the typed object of its Section (Section.of reads it)
    sections: Mapping[str, object] = field(default_factory=dict)
    # the sections it was checked against, in the file's order
    declared: tuple[Section[Any], ...] = ()
    delivery_channels: tuple[DeliveryChannel, ...] = ()
    # purpose -> channel name; every purpose of DELIVERY_PURPOSES has one.
    delivery_routes: Mapping[str, str] = field(
        default_factory=lambda: dict.fromkeys(DELIVERY_PURPOSES, RECORD_CHANNEL)
    )
    job_entries: tuple[JobEntry, ...] = ()
    from_env: frozenset[str] = field(default_factory=frozenset)
    from_file: frozenset[str] = field(default_factory=frozenset)

    def source_of(self, name: str) -> str:
        """Where `section.key` came from: "file", "environment" or "default"."""
        if name in self.from_file:
            return "file"
        return "environment" if name in self.from_env else "default"

    @property
    def values(self) -> dict[str, dict[str, Any]]:
        """Every section's values by key, read off the typed sections (their one home)."""
        return {
            name: {f.name: getattr(typed, f.name) for f in fields(typed)}  # type: ignore[arg-type]
            for name, typed in self.sections.items()
        }

    def value(self, section: str, key: str) -> Any:
        """One value by its section and key, for code that walks the keys (the
        show command, the tests); the apps read their typed section instead."""
        return getattr(self.sections[section], key)

    def read(self, key: Key) -> Any:
        """The value of a key the kernel owns but an app's section holds
        (kernel.REQUEST_BODY_LIMIT, kernel.UNKNOWN_COOLDOWN)."""
        for section in self.declared:
            for name, declared in section.keys.items():
                if declared is key:
                    return self.value(section.name, name)
        raise LookupError(f"no section of this config holds {key.doc!r}")

    @property
    def database_url(self) -> str:
        return DATABASE.of(self).url or f"sqlite:///{self.home / 'xworkmate.sqlite3'}"

    @property
    def broker_url(self) -> str:
        return BROKER.of(self).url or "filesystem://"

    @property
    def broker_folder(self) -> Path:
        """Where the file-based broker keeps its messages (embedded mode only)."""
        path = urlsplit(self.broker_url).path
        return Path(path) if path not in ("", "/") else self.home / "broker"

    @property
    def workspace_roots(self) -> tuple[str, ...]:
        return WORKSPACE.of(self).roots


def resolve_config_path(env: Mapping[str, str], cwd: Path) -> Path | None:
    """The file to read: XWORKMATE_CONFIG, else ./xworkmate.toml if present, else none."""
    explicit = env.get(CONFIG_ENV, "").strip()
    if explicit:
        return Path(explicit).expanduser()
    candidate = cwd / DEFAULT_CONFIG_FILE
    return candidate if candidate.is_file() else None


def resolve_home(env: Mapping[str, str], cwd: Path) -> Path:
    """XWORKMATE_HOME (relative to `cwd` when it is relative), else the default one."""
    raw = env.get(HOME_ENV, "").strip()
    if not raw:
        return default_home(env)
    home = Path(raw).expanduser()
    return (home if home.is_absolute() else cwd / home).resolve()


_CODE_ROOT = Path(__file__).resolve().parents[2]


def default_home(env: Mapping[str, str], code_root: Path = _CODE_ROOT) -> Path:
    """`var` in the checkout the code runs from; for an installed package, the user's
    data folder (`$XDG_DATA_HOME/xworkmate`, `~/.local/share/xworkmate`).

    Never the current directory: a command run from elsewhere finds the data home
    `make run` uses, instead of creating (and then reporting as never migrated) a
    `./var` wherever it was typed.
    """
    if (code_root / "manage.py").is_file() and (code_root / "pyproject.toml").is_file():
        return code_root / DEFAULT_HOME
    data = env.get("XDG_DATA_HOME", "").strip() or "~/.local/share"
    return (Path(data).expanduser() / "xworkmate").resolve()


def load_config(
    path: Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    sections: Sections,
) -> Config:
    """Read, validate and type the configuration; raise ConfigError listing every problem."""
    env = os.environ if env is None else env
    cwd = Path.cwd() if cwd is None else cwd
    # Who named the file, for a missing one: the variable, or the caller (`--check FILE`).
    named_by = None
    if path is None:
        path = resolve_config_path(env, cwd)
        named_by = CONFIG_ENV
    raw: dict[str, Any] = {}
    source = "built-in defaults"
    if path is not None:
        source = str(path)
        raw = _read_toml(path, named_by=named_by)
    return _build(raw, source=source, env=env, home=resolve_home(env, cwd), sections=sections)


def parse_config_text(
    text: str,
    *,
    env: Mapping[str, str] | None = None,
    home: Path,
    sections: Sections,
) -> Config:
    """Validate TOML given as text (used by tests and ``config --check -``)."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([f"<text>: not valid TOML: {exc}"]) from exc
    return _build(
        raw, source="<text>", env={} if env is None else env, home=home, sections=sections
    )


def _read_toml(path: Path, *, named_by: str | None) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError as exc:
        if named_by is None:
            raise ConfigError([f"{path}: config file not found"]) from exc
        raise ConfigError([f"{named_by}: config file not found: {path}"]) from exc
    except OSError as exc:
        raise ConfigError([f"{path}: cannot read config file: {exc.strerror}"]) from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([f"{path}: not valid TOML: {exc}"]) from exc


def _build(
    raw: dict[str, Any],
    *,
    source: str,
    env: Mapping[str, str],
    home: Path,
    sections: Sections,
) -> Config:
    declared = tuple(sections)
    problems: list[str] = []
    values: dict[str, dict[str, Any]] = {}
    from_env: set[str] = set()
    from_file: set[str] = set()
    known_sections = {*(s.name for s in declared), "periodic_jobs"}
    for section in raw:
        if section not in known_sections:
            problems.append(
                f"{section}: unknown section (known: {', '.join(sorted(known_sections))})"
            )
    for declared_section in declared:
        section, keys = declared_section.name, declared_section.keys
        given = raw.get(section, {})
        if not isinstance(given, dict):
            problems.append(f"{section}: must be a table ([{section}])")
            given = {}
        for key in given:
            if key not in keys and (section, key) not in TABLES_OF_SECTIONS:
                problems.append(f"{section}.{key}: unknown key (known: {', '.join(keys)})")
        values[section] = {}
        for key, spec in keys.items():
            name = f"{section}.{key}"
            from_environment = bool(spec.env and env.get(spec.env, "").strip())
            # An empty value in the file means "not set here" when the key has an
            # environment variable: copying the example file must not mask
            # DATABASE_URL or a secret with its empty strings (D-K21).
            if key in given and not (from_environment and given[key] == ""):
                value: object = given[key]
                from_file.add(name)
            elif spec.env and from_environment:
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
    if "workspace" in values and "broker" in values:
        problems += workspace_problems(values["workspace"], values["broker"].get("url", ""))
    channels, routes = build_delivery(raw.get("delivery", {}), problems)
    jobs = _build_jobs(raw.get("periodic_jobs", []), problems)
    if problems:
        raise ConfigError([f"{source}: {p}" for p in problems])
    return Config(
        source=source,
        home=home,
        sections={s.name: s.build(values[s.name]) for s in declared},
        declared=declared,
        delivery_channels=channels,
        delivery_routes=routes,
        job_entries=jobs,
        from_env=frozenset(from_env),
        from_file=frozenset(from_file),
    )


def _build_jobs(raw: object, problems: list[str]) -> tuple[JobEntry, ...]:
    if not isinstance(raw, list):
        problems.append("periodic_jobs: must be an array of tables ([[periodic_jobs]])")
        return ()
    entries: dict[str, JobEntry] = {}
    for index, item in enumerate(raw):
        where = f"periodic_jobs[{index}]"
        checked = check_table(where, item, JOB_SCHEMA, problems)
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
