"""Is the database there and migrated? One-line answers for every command (issue 22).

Apart from xworkmate.bootstrap so the apps' commands (`manage.py plans`, `manage.py
longrun`, `xworkmate-longrun`) ask it without importing the health checks and
what they read (`manage.py xworkmate` and bootstrap import it too).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor

__all__ = [
    "ServiceUnavailable",
    "require_database_initialised",
    "require_migrated_database",
    "wait_for_migrated_database",
]


class ServiceUnavailable(RuntimeError):
    """A service the process needs cannot be reached; the message names it."""


_MIGRATE_HINT = "run `.venv/bin/python manage.py migrate` (or `make run`) first"


def _require_a_database_file() -> None:
    """A missing SQLite file is reported without opening it: opening would create it."""
    name = str(connection.settings_dict["NAME"])
    in_memory = name == ":memory:" or "mode=memory" in name
    if connection.vendor == "sqlite" and not in_memory and not Path(name).is_file():
        raise ServiceUnavailable(
            f"database: {name} does not exist (never migrated); {_MIGRATE_HINT}"
        )


def _unreadable(exc: DatabaseError) -> ServiceUnavailable:
    db = connection.settings_dict
    where = db.get("HOST") or db["NAME"]
    return ServiceUnavailable(
        f"database: cannot read {connection.vendor} at {where} "
        f"(database.url / DATABASE_URL): {exc}".strip()
    )


def require_migrated_database() -> None:
    """Refuse, in one line, a database that was never migrated (or lags behind).

    A command that reads tables of a fresh data home would otherwise end in a
    traceback ("no such table"), and SQLite would leave an empty database file
    behind, wherever the data home happened to resolve.
    """
    _require_a_database_file()
    name = str(connection.settings_dict["NAME"])
    try:
        executor = MigrationExecutor(connection)
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except DatabaseError as exc:
        raise _unreadable(exc) from exc
    if pending and not executor.loader.applied_migrations:
        raise ServiceUnavailable(f"database: {name} was never migrated; {_MIGRATE_HINT}")
    if pending:
        raise ServiceUnavailable(
            f"database: {name} lacks {len(pending)} migration(s) of this version; {_MIGRATE_HINT}"
        )


def require_database_initialised() -> None:
    """The same one-line refusal of a never-migrated database, for the commands agents
    and operators call often (`manage.py longrun`, `xworkmate-longrun`, `manage.py
    plans`): one query, not the migration graph (issue 22). A database that lags
    behind is left to `xworkmate run` and `serve`, which check it whole."""
    _require_a_database_file()
    name = str(connection.settings_dict["NAME"])
    try:
        tables = connection.introspection.table_names()
    except DatabaseError as exc:
        raise _unreadable(exc) from exc
    if "django_migrations" not in tables:
        raise ServiceUnavailable(f"database: {name} was never migrated; {_MIGRATE_HINT}")


def wait_for_migrated_database(
    say: Callable[[str], None], *, poll_seconds: float = 2.0, say_every_seconds: float = 30.0
) -> None:
    """Return once the database answers and is migrated; until then say why, now and then.

    A process of the production profile started by an init system or a compose file
    (`xworkmate serve --only ...`) may come up before the database server or before
    the migrations ran: it waits here instead of dying and being restarted into a
    start limit. Each check is bounded (D-K22), so the wait is a loop of short calls.
    """
    said_at: float | None = None
    while True:
        try:
            require_migrated_database()
            connection.close()  # the process about to be exec'd opens its own
            return
        except ServiceUnavailable as exc:
            now = time.monotonic()
            if said_at is None or now - said_at >= say_every_seconds:
                say(f"xworkmate: waiting for the database: {exc}")
                said_at = now
        connection.close()
        time.sleep(poll_seconds)
