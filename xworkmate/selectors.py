"""Reads of the kernel: API keys by token, periodic job state."""

from __future__ import annotations

import hashlib
from datetime import datetime

from xworkmate.models import ApiKey, BeatLease, PeriodicJobState


def hash_api_key(raw: str) -> str:
    # Keys are 256-bit random tokens, so a plain SHA-256 is enough: there is no
    # password to brute-force, and a fast hash keeps every request cheap.
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def api_key_for_token(raw: str) -> ApiKey | None:
    """The key whose hash matches `raw`, revoked or not (the caller decides)."""
    return ApiKey.objects.filter(key_hash=hash_api_key(raw)).first()


def periodic_job_states() -> dict[str, PeriodicJobState]:
    return {state.name: state for state in PeriodicJobState.objects.all()}


def beat_lease() -> dict[str, str] | None:
    """Which beat holds the lease, and until when (D-K25); None before any beat ran."""
    lease = BeatLease.objects.filter(name="beat").first()
    if lease is None:
        return None
    return {"holder": lease.holder, "expires_at": lease.expires_at.isoformat()}


def beat_lease_row() -> tuple[str, datetime] | None:
    """The lease's holder and expiry (D-K25), for /metrics; None before any beat ran."""
    lease = BeatLease.objects.filter(name="beat").first()
    return None if lease is None else (lease.holder, lease.expires_at)
