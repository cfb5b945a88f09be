"""Turn a DATABASE_URL into Django's DATABASES entry (sqlite or PostgreSQL)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit


def database_settings(url: str) -> dict[str, Any]:
    parts = urlsplit(url)
    if parts.scheme == "sqlite":
        # sqlite:////abs/path.db and sqlite:///abs/path.db both name an absolute file.
        name = unquote(parts.path) or ":memory:"
        if name.startswith("//"):
            name = name[1:]
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": name,
            "OPTIONS": {
                # Web, worker and beat share one file: wait for locks instead of
                # failing, take the write lock at BEGIN so a read-then-write
                # transaction cannot deadlock, and let readers run beside a writer.
                "timeout": 30,
                "transaction_mode": "IMMEDIATE",
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    if parts.scheme in ("postgres", "postgresql"):
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parts.path.lstrip("/")),
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(parts.port or ""),
            "OPTIONS": dict(parse_qsl(parts.query)),
            "CONN_MAX_AGE": 60,
            "CONN_HEALTH_CHECKS": True,
        }
    raise ValueError(f"unsupported database URL scheme {parts.scheme!r}")
