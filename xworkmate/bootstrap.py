"""First-run set-up and the pre-start checks of the one-command run."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import DatabaseError, connection, transaction

from xworkmate.health import check_broker
from xworkmate.models import ApiKey
from xworkmate.policies import SCOPES
from xworkmate.services import api_key_create

ADMIN_PASSWORD_ENV = "XWORKMATE_ADMIN_PASSWORD"  # noqa: S105 (a variable name)
LOCAL_KEY_NAME = "local"


class ServiceUnavailable(RuntimeError):
    """A service the process needs cannot be reached; the message names it."""


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


@dataclass(frozen=True)
class BootstrapResult:
    admin_username: str
    admin_password: str | None  # set only when the user was created with a generated password
    admin_created: bool
    api_key_token: str | None  # set only when the key was created now


def bootstrap() -> BootstrapResult:
    """Create the admin user and a local API key if they are missing (idempotent)."""
    username = settings.XWORKMATE.get("service", "admin_username")
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
            name=LOCAL_KEY_NAME, scopes=[s for s in SCOPES if s.endswith(":write")]
        )
    return BootstrapResult(username, password, created, token)
