"""Turn a DATABASE_URL into Django's DATABASES entry (sqlite or PostgreSQL)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

# Every call to PostgreSQL is bounded (D-K22): a connect waits at most 5 s, and on an
# open connection to a server that stopped answering (a frozen host, a dropped route)
# the kernel gives up after 30 s of unacknowledged data (tcp_user_timeout) or three
# unanswered keepalives, instead of the request waiting forever. libpq's names.
POSTGRES_BOUNDS = {
    "connect_timeout": "5",
    "keepalives": "1",
    "keepalives_idle": "30",
    "keepalives_interval": "10",
    "keepalives_count": "3",
    "tcp_user_timeout": "30000",
}


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
            # The URL's own parameters win over the bounds below.
            "OPTIONS": POSTGRES_BOUNDS | dict(parse_qsl(parts.query)),
            "CONN_MAX_AGE": 60,
            "CONN_HEALTH_CHECKS": True,
        }
    raise ValueError(f"unsupported database URL scheme {parts.scheme!r}")
