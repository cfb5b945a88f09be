"""What a settings section is made of: keys with defaults and checkers, and the error.

Framework-free: settings.py and each app's ``conf.py`` import it before Django is
set up. A checker takes the raw TOML value and returns the typed value or raises
ValueError with the rule, worded to follow "<key>: ", so every problem names its
key (``artifacts.max_files: must be an integer >= 1 (got 0)``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from xworkmate.lib.durations import DurationError, parse_duration
from xworkmate.lib.timezones import TimeZoneError, get_zone


class ConfigError(Exception):
    """The configuration cannot be used; ``problems`` has one line per key."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Key:
    """One key of a section: its default, its checker, and where else it may come from."""

    default: Any
    check: Callable[[object], Any]
    env: str | None = None
    secret: bool = False
    doc: str = ""


def show_value(value: object) -> str:
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, int | float) else type(value).__name__


def check_str(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"must be a string (got {show_value(value)})")
    return value


def check_nonempty_str(value: object) -> str:
    text = check_str(value).strip()
    if not text:
        raise ValueError("must not be empty")
    return text


def check_bool(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"must be true or false (got {show_value(value)})")
    return value


def int_at_least(minimum: int, maximum: int | None = None) -> Callable[[object], int]:
    def check(value: object) -> int:
        # bool is an int subclass in Python; `max_files = true` is a mistake.
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ValueError(f"must be an integer >= {minimum} (got {show_value(value)})")
        if maximum is not None and value > maximum:
            raise ValueError(f"must be an integer <= {maximum} (got {show_value(value)})")
        return value

    return check


def check_duration(value: object) -> timedelta:
    try:
        return parse_duration(check_str(value))
    except DurationError as exc:
        raise ValueError(str(exc)) from exc


def check_time_zone(value: object) -> str:
    name = check_str(value)
    try:
        return get_zone(name).key  # the canonical spelling ("asia/shanghai" reads as Asia/Shanghai)
    except TimeZoneError as exc:
        raise ValueError(str(exc)) from exc


def check_str_list(value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ValueError(f"must be a list of non-empty strings (got {show_value(value)})")
    return tuple(v.strip() for v in value)


def check_nonempty_str_list(value: object) -> tuple[str, ...]:
    items = check_str_list(value)
    if not items:
        raise ValueError("must list at least one entry")
    return items


def url_checker(schemes: tuple[str, ...]) -> Callable[[object], str]:
    def check(value: object) -> str:
        text = check_str(value).strip()
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


def check_http_url(value: object) -> str:
    text = check_nonempty_str(value)
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"must be an http:// or https:// URL (got {text!r})")
    return text
