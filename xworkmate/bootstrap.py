"""First-run set-up and the pre-start checks of the one-command run."""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import DatabaseError, connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.utils import translation

from xworkmate.config.kernel import SERVICE
from xworkmate.health import check_broker
from xworkmate.models import ApiKey
from xworkmate.policies import METRICS_READ, SCOPES
from xworkmate.services import api_key_create

ADMIN_PASSWORD_ENV = "XWORKMATE_ADMIN_PASSWORD"  # noqa: S105 (a variable name)
LOCAL_KEY_NAME = "local"


class ServiceUnavailable(RuntimeError):
    """A service the process needs cannot be reached; the message names it."""


class AdminPasswordRefused(ValueError):
    """XWORKMATE_ADMIN_PASSWORD fails the password validators; the message says which rules."""


def check_admin_password() -> None:
    """Refuse a set XWORKMATE_ADMIN_PASSWORD that Django's password validators refuse (D-K14).

    Checked whenever the variable is set, before anything is created (the run
    checks it even before migrating), so a weak password can neither become the
    admin's nor leave a half set-up data home behind. The messages are English,
    as the rest of the command line is, whatever `service.language_code` says.
    """
    given = os.environ.get(ADMIN_PASSWORD_ENV, "")
    if not given:
        return
    # An unsaved user: the similarity rule compares with the admin's username.
    user = get_user_model()(username=SERVICE.of(settings.XWORKMATE).admin_username)
    with translation.override("en"):
        try:
            validate_password(given, user=user)
        except ValidationError as exc:
            rules = " ".join(exc.messages)
            raise AdminPasswordRefused(
                f"{ADMIN_PASSWORD_ENV}: {rules} Nothing was created; set a stronger password, "
                "or unset the variable to have one generated."
            ) from exc


def require_services() -> None:
    """Refuse to start unless the database and the broker answer."""
    db = settings.DATABASES["default"]
    try:
        connection.ensure_connection()
    except DatabaseError as exc:
        where = db.get("HOST") or db.get("NAME")
        raise ServiceUnavailable(
            f"database: cannot connect to {db['ENGINE'].rsplit('.', 1)[-1]} at {where} "
            f"(database.url / DATABASE_URL): {exc}".strip()
        ) from exc
    broker = check_broker()
    if broker["status"] != "ok":
        raise ServiceUnavailable(
            f"broker: cannot connect to {broker['transport']} "
            f"(broker.url / CELERY_BROKER_URL): {broker.get('error', 'unreachable')}"
        )


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


def _expand_root(raw: str) -> Path:
    """A workspace root as the artifact engine expands it: `~/…` is home, else CWD-relative."""
    if raw == "~" or raw.startswith("~/"):
        return Path(os.path.expanduser("~")) / raw[2:]
    return Path(os.path.abspath(raw))


def create_workspace_roots() -> tuple[list[str], list[str]]:
    """Create the configured workspace roots that do not exist yet.

    The first root is the default workspace of every prepare: on a fresh
    machine `~/.openclaw/workspace` does not exist, and the first call would
    answer ENOENT. Returns the roots created now and one line per root that
    could not be created (the service still starts; calls naming it fail).
    """
    created: list[str] = []
    problems: list[str] = []
    for raw in settings.XWORKMATE.workspace_roots:
        root = _expand_root(raw)
        if root.exists():
            continue
        try:
            root.mkdir(parents=True)
        except FileExistsError:
            continue
        except OSError as exc:
            problems.append(f"workspace.roots: cannot create {root}: {exc.strerror}")
            continue
        created.append(str(root))
    return created, problems


@dataclass(frozen=True)
class BootstrapResult:
    admin_username: str
    admin_password: str | None  # set only when the user was created with a generated password
    admin_created: bool
    api_key_token: str | None  # set only when the key was created now
    workspace_roots_created: tuple[str, ...] = ()
    workspace_root_problems: tuple[str, ...] = ()


def bootstrap() -> BootstrapResult:
    """Create the admin user, a local API key and the workspace roots if missing (idempotent).

    Raises AdminPasswordRefused, having created nothing, for a weak XWORKMATE_ADMIN_PASSWORD.
    """
    check_admin_password()
    username = SERVICE.of(settings.XWORKMATE).admin_username
    user_model = get_user_model()
    password: str | None = None
    created = False
    with transaction.atomic():
        if not user_model.objects.filter(username=username).exists():
            given = os.environ.get(ADMIN_PASSWORD_ENV, "")
            password = given or secrets.token_urlsafe(12)
            user_model.objects.create_superuser(username=username, email="", password=password)
            created = True
            if given:
                password = None  # the operator knows it; never echo a supplied secret
    token: str | None = None
    if not ApiKey.objects.filter(name=LOCAL_KEY_NAME).exists():
        _, token = api_key_create(
            name=LOCAL_KEY_NAME,
            scopes=[s for s in SCOPES if s.endswith(":write") or s == METRICS_READ],
        )
    roots_created, root_problems = create_workspace_roots()
    return BootstrapResult(
        username, password, created, token, tuple(roots_created), tuple(root_problems)
    )
