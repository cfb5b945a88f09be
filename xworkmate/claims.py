"""The claim-and-handle loop every periodic worker runs (D-K17).

The long-run monitors (heartbeat, keepalive, watchdog) and the plan scheduler
each pick due rows and act on them, and each must survive three things: a
second worker (or a duplicate beat tick) running the same loop at the same
time, a row that stopped being due between the look and the claim, and one
row whose handling fails. The answer is the same for all of them, so it lives
here once:

- candidates are read without a lock (cheap, may be stale);
- each candidate is claimed in a transaction of its own with
  ``SELECT … FOR UPDATE SKIP LOCKED`` through the queryset that says what
  "due" means, so the decision is taken again on the locked row, and a row
  another worker holds is theirs (skipped, not waited for);
- a failure rolls back that item's transaction only and is handed to
  ``failed``, which reports it; the loop goes on with the next candidate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from django.db import models, transaction

K = TypeVar("K")
M = TypeVar("M", bound=models.Model)


def claim_row(due: models.QuerySet[M], pk: Any) -> M | None:
    """Row ``pk`` of ``due``, locked for this transaction; None when it is no longer
    due (the queryset's filter is checked again on the locked row) or another
    transaction holds it."""
    return due.select_for_update(skip_locked=True).filter(pk=pk).first()


def claim_and_handle(
    candidates: Iterable[K],
    *,
    claim: Callable[[K], M | None],
    handle: Callable[[M], None],
    failed: Callable[[K, Exception], None],
) -> int:
    """Claim each candidate in its own transaction and handle it; how many were handled.

    ``claim`` runs inside the item's transaction and returns the locked row or
    None (skip). ``failed`` is called outside that transaction, after it rolled
    back, with the candidate and the exception; it must not raise.
    """
    handled = 0
    for key in candidates:
        try:
            with transaction.atomic():
                row = claim(key)
                if row is None:
                    continue
                handle(row)
        except Exception as exc:  # noqa: BLE001 (one item's failure never drops the others)
            failed(key, exc)
        else:
            handled += 1
    return handled
