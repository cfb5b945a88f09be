"""The write path of the kernel: API keys, periodic job state, admin preferences."""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, User
from django.db import IntegrityError, transaction
from django.db.models import F, Q

from xworkmate.config import PeriodicJob
from xworkmate.lib.jstext import KEY_MAX_LENGTH, check_max_length, js_trim
from xworkmate.models import ApiKey, BeatLease, PeriodicJobState, UserPreference
from xworkmate.policies import LAST_USED_RESOLUTION, SCOPES
from xworkmate.selectors import hash_api_key

KEY_PREFIX = "xwm_"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class ApiKeyError(ValueError):
    """Bad input for an API key operation; the message names the field and rule."""


@dataclass(frozen=True)
class KeyBinding:
    """The trusted task-run context of an agent key (§13.0); empty = not bound."""

    session_key: str = ""
    run_id: str = ""
    workspace_dir: str = ""
    artifact_scope: str = ""


def validate_key_binding(binding: KeyBinding) -> KeyBinding:
    # Trimmed as the gateway trims the params a bound key overrides (D-K7).
    cleaned = KeyBinding(
        session_key=js_trim(binding.session_key),
        run_id=js_trim(binding.run_id),
        workspace_dir=js_trim(binding.workspace_dir),
        artifact_scope=js_trim(binding.artifact_scope),
    )
    if bool(cleaned.session_key) != bool(cleaned.run_id):
        raise ApiKeyError(
            "session: a bound key needs both a session key and a run id (--session and --run)"
        )
    if (cleaned.workspace_dir or cleaned.artifact_scope) and not cleaned.session_key:
        raise ApiKeyError("session: a workspace or task directory needs --session and --run")
    for field_name, value, limit in (
        ("session", cleaned.session_key, KEY_MAX_LENGTH),
        ("run", cleaned.run_id, KEY_MAX_LENGTH),
        ("workspace", cleaned.workspace_dir, 1024),
        ("artifact-scope", cleaned.artifact_scope, 1024),
    ):
        check_max_length(field_name, value, limit, error=ApiKeyError)
    return cleaned


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
    *,
    name: str,
    scopes: Iterable[str],
    created_by: User | None = None,
    binding: KeyBinding | None = None,
) -> tuple[ApiKey, str]:
    """Create a key and return it with the plain token, which is never stored.

    With a binding the key is an agent key: its session and run override the
    params of every gateway call it makes (§13.0).
    """
    cleaned = validate_api_key_input(name, scopes)
    bound = validate_key_binding(binding or KeyBinding())
    taken = ApiKeyError(f"name: an API key named {name!r} already exists")
    if ApiKey.objects.filter(name=name).exists():
        raise taken
    token = KEY_PREFIX + secrets.token_urlsafe(32)
    try:
        # A savepoint: two callers creating one name both pass the check above;
        # the unique name refuses the second insert, which is the same answer.
        with transaction.atomic():
            key = ApiKey.objects.create(
                name=name,
                prefix=token[: len(KEY_PREFIX) + 6],
                key_hash=hash_api_key(token),
                scopes=cleaned,
                created_by=created_by,
                bound_session_key=bound.session_key,
                bound_run_id=bound.run_id,
                bound_workspace_dir=bound.workspace_dir,
                bound_artifact_scope=bound.artifact_scope,
            )
    except IntegrityError as exc:
        if ApiKey.objects.filter(name=name).exists():
            raise taken from exc
        raise
    return key, token


def api_key_revoke(*, key: ApiKey, now: datetime) -> bool:
    """Revoke once; returns False when it was already revoked (revocation is sticky)."""
    updated = ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(revoked_at=now)
    key.refresh_from_db(fields=["revoked_at"])
    return updated == 1


def api_key_touch(*, key: ApiKey, now: datetime) -> None:
    """Record use, at most once per LAST_USED_RESOLUTION (D-K8).

    The caller only calls this when the row it just read is stale, so a busy
    key costs one UPDATE a minute, not one per request; the condition in the
    UPDATE keeps concurrent callers from moving the time more than once.
    """
    ApiKey.objects.filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lte=now - LAST_USED_RESOLUTION), pk=key.pk
    ).update(last_used_at=now)
    key.last_used_at = now


def periodic_jobs_mark_seen(*, jobs: Iterable[PeriodicJob], now: datetime) -> None:
    """A beat process started with these jobs in its schedule."""
    with transaction.atomic():
        for job in jobs:
            PeriodicJobState.objects.update_or_create(
                name=job.name, defaults={"task": job.task, "beat_seen_at": now}
            )


def periodic_job_record_tick(
    *, name: str, task: str, started_at: datetime, finished_at: datetime, error: str = ""
) -> None:
    """One run of a periodic job finished (with `error` when it failed)."""
    with transaction.atomic():
        state, _ = PeriodicJobState.objects.select_for_update().get_or_create(
            name=name, defaults={"task": task}
        )
        PeriodicJobState.objects.filter(pk=state.pk).update(
            task=task,
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


BEAT_LEASE = "beat"


def beat_lease_hold(*, holder: str, now: datetime, period: timedelta) -> bool:
    """Take or renew the beat lease for `holder`; whether it holds it now (D-K25).

    A conditional UPDATE decides: the row is this holder's (renewed), or its
    lease has expired (taken over). Two beats racing for an expired lease both
    run the UPDATE; the database applies one after the other and the second
    finds it no longer expired, so exactly one wins. The row is created by the
    first beat ever; a beat that loses that race finds it held.
    """
    expires = now + period
    lease = BeatLease.objects.filter(name=BEAT_LEASE)
    with transaction.atomic():
        if lease.filter(holder=holder).update(renewed_at=now, expires_at=expires):
            return True
        if lease.filter(expires_at__lte=now).update(
            holder=holder, acquired_at=now, renewed_at=now, expires_at=expires
        ):
            return True
        if lease.exists():
            return False  # another beat holds it
        try:
            with transaction.atomic():
                BeatLease.objects.create(
                    name=BEAT_LEASE, holder=holder, acquired_at=now, renewed_at=now,
                    expires_at=expires,
                )
        except IntegrityError:
            return False  # another beat created it first
        return True
