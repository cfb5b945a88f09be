"""The write path of the project package: API keys, periodic job state, preferences."""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable
from datetime import datetime

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, User
from django.db import transaction
from django.db.models import F, Q

from xworkmate.config import PeriodicJob
from xworkmate.models import SCOPES, ApiKey, PeriodicJobState, UserPreference
from xworkmate.policies import LAST_USED_RESOLUTION
from xworkmate.selectors import hash_api_key

KEY_PREFIX = "xwm_"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class ApiKeyError(ValueError):
    """Bad input for an API key operation; the message names the field and rule."""


def validate_api_key_input(name: str, scopes: Iterable[str]) -> list[str]:
    if not _NAME_RE.match(name):
        raise ApiKeyError(
            f"name: must be 1-100 letters, digits, '.', '_' or '-', starting with a letter "
            f"or digit (got {name!r})"
        )
    cleaned: list[str] = []
    for scope in scopes:
        if scope not in SCOPES:
            raise ApiKeyError(f"scope: unknown scope {scope!r} (known: {', '.join(SCOPES)})")
        if scope not in cleaned:
            cleaned.append(scope)
    if not cleaned:
        raise ApiKeyError("scope: at least one scope is required")
    return cleaned


def api_key_create(
    *, name: str, scopes: Iterable[str], created_by: User | None = None
) -> tuple[ApiKey, str]:
    """Create a key and return it with the plain token, which is never stored."""
    cleaned = validate_api_key_input(name, scopes)
    if ApiKey.objects.filter(name=name).exists():
        raise ApiKeyError(f"name: an API key named {name!r} already exists")
    token = KEY_PREFIX + secrets.token_urlsafe(32)
    key = ApiKey.objects.create(
        name=name,
        prefix=token[: len(KEY_PREFIX) + 6],
        key_hash=hash_api_key(token),
        scopes=cleaned,
        created_by=created_by,
    )
    return key, token


def api_key_revoke(*, key: ApiKey, now: datetime) -> bool:
    """Revoke once; returns False when it was already revoked (revocation is sticky)."""
    updated = ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(revoked_at=now)
    key.refresh_from_db(fields=["revoked_at"])
    return updated == 1


def api_key_touch(*, key: ApiKey, now: datetime) -> None:
    """Record use, at most once per LAST_USED_RESOLUTION (one conditional UPDATE)."""
    ApiKey.objects.filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lte=now - LAST_USED_RESOLUTION), pk=key.pk
    ).update(last_used_at=now)


def periodic_jobs_mark_seen(*, jobs: Iterable[PeriodicJob], now: datetime) -> None:
    """A beat process started with these jobs in its schedule."""
    with transaction.atomic():
        for job in jobs:
            PeriodicJobState.objects.update_or_create(
                name=job.name, defaults={"task": job.task, "beat_seen_at": now}
            )


def periodic_job_record_tick(
    *, job: PeriodicJob, started_at: datetime, finished_at: datetime, error: str = ""
) -> None:
    with transaction.atomic():
        state, _ = PeriodicJobState.objects.select_for_update().get_or_create(
            name=job.name, defaults={"task": job.task}
        )
        PeriodicJobState.objects.filter(pk=state.pk).update(
            task=job.task,
            last_tick_at=started_at,
            last_finished_at=finished_at,
            last_status="error" if error else "ok",
            last_error=error[:2000],
            runs=F("runs") + 1,
            failures=F("failures") + (1 if error else 0),
        )


def user_set_language(*, user: AbstractBaseUser, language: str) -> None:
    known = [code for code, _ in settings.LANGUAGES]
    if language not in known:
        raise ValueError(f"language: must be one of {', '.join(known)} (got {language!r})")
    UserPreference.objects.update_or_create(user=user, defaults={"language": language})
