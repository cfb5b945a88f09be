"""Pure rules of the kernel: API key scopes and last use.

No database, no clock, no framework: callers pass `now` (a policy, D-K18).
Tested directly in tests/xworkmate. The health of a periodic job depends on
when Celery beat fires it, so it lives with beat (xworkmate.periodic).
"""

from __future__ import annotations

from datetime import datetime, timedelta

# The areas an API key's scopes name (`<area>:read` / `<area>:write`).
AREAS = ("gateway", "plans", "longrun", "delivery")
# Reading the service's metrics (/metrics, D-K26): there is nothing to write.
METRICS_READ = "metrics:read"
SCOPES = (
    *(f"{area}:{level}" for area in AREAS for level in ("read", "write")),
    METRICS_READ,
)

# How long a key's last_used_at may lag: we write it at most this often, so a
# busy bridge does not turn every request into an UPDATE.
LAST_USED_RESOLUTION = timedelta(seconds=60)


def scope_allows(granted: list[str] | tuple[str, ...], required: str) -> bool:
    """Write implies read within one area; areas never imply each other."""
    if required in granted:
        return True
    area, _, level = required.partition(":")
    return level == "read" and f"{area}:write" in granted


def last_used_is_stale(last_used_at: datetime | None, now: datetime) -> bool:
    """Whether a use at `now` should be written (D-K8: at most once per resolution)."""
    return last_used_at is None or now - last_used_at >= LAST_USED_RESOLUTION


def bind_problem(bind: str) -> str | None:
    """What is wrong with a web address `HOST:PORT` (`[v6]:PORT`, or `unix:PATH`), or None."""
    if bind.startswith("unix:"):
        return None if len(bind) > len("unix:") else "a unix: address needs a path"
    host, sep, port = bind.rpartition(":")
    if not sep or not host:
        return f"must be HOST:PORT or unix:PATH (got {bind!r})"
    if not port.isdigit() or not 0 < int(port) < 65536:
        return f"the port must be a TCP port number 1-65535 (got {bind!r})"
    return None


def production_problem(database_vendor: str, broker_url: str) -> str | None:
    """Why `xworkmate serve` refuses this database and broker, or None (issue 20).

    The production profile runs several web workers and Celery workers, possibly on
    several hosts: they need a database server and a broker server. The embedded
    SQLite file and file broker serve one machine, and `xworkmate run` runs them.
    """
    if database_vendor == "sqlite":
        return (
            "database: serve is the production profile and needs PostgreSQL "
            "(set DATABASE_URL or database.url); for the embedded SQLite default run "
            "`xworkmate run`"
        )
    if broker_url.startswith("filesystem://"):
        return (
            "broker: serve is the production profile and needs a broker server such as "
            "Redis (set CELERY_BROKER_URL or broker.url); for the embedded file broker run "
            "`xworkmate run`"
        )
    return None
