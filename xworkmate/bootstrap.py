"""First-run set-up and the pre-start checks of the one-command run."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import DatabaseError, connection, transaction
from django.utils import translation

from xworkmate.config.kernel import SERVICE

# The database's readiness lives apart (xworkmate.dbcheck), for the apps' commands.
from xworkmate.dbcheck import ServiceUnavailable
from xworkmate.health import check_broker
from xworkmate.models import ApiKey
from xworkmate.policies import METRICS_READ, SCOPES
from xworkmate.services import api_key_create

ADMIN_PASSWORD_ENV = "XWORKMATE_ADMIN_PASSWORD"  # noqa: S105 (a variable name)
LOCAL_KEY_NAME = "local"


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
