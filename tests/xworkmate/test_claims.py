"""D-K17: the claim-and-handle loop: decide again inside the claim, one failure never drops the others."""

from __future__ import annotations

import pytest

from xworkmate.claims import claim_and_handle, claim_row
from xworkmate.models import PeriodicJobState

pytestmark = pytest.mark.django_db


def _rows(*names: str) -> list[int]:
    return [PeriodicJobState.objects.create(name=n, task="xworkmate.t").pk for n in names]


def test_a_row_no_longer_due_when_claimed_is_skipped():
    pks = _rows("a", "b", "c")
    due = PeriodicJobState.objects.filter(last_status="")
    # Between the look and the claim another worker handled "b".
    PeriodicJobState.objects.filter(name="b").update(last_status="ok")
    seen: list[str] = []

    def handle(row: PeriodicJobState) -> None:
        seen.append(row.name)

    handled = claim_and_handle(
        pks, claim=lambda pk: claim_row(due, pk), handle=handle, failed=lambda k, e: None
    )
    assert (handled, seen) == (2, ["a", "c"])


def test_a_failing_item_is_reported_and_rolled_back_and_the_others_still_run():
    pks = _rows("a", "b", "c")
    failures: list[tuple[int, str]] = []

    def handle(row: PeriodicJobState) -> None:
        row.runs += 1
        row.save(update_fields=["runs"])
        if row.name == "b":
            raise RuntimeError("boom")

    handled = claim_and_handle(
        pks,
        claim=lambda pk: claim_row(PeriodicJobState.objects.all(), pk),
        handle=handle,
        failed=lambda pk, exc: failures.append((pk, str(exc))),
    )
    assert handled == 2
    assert failures == [(pks[1], "boom")]
    runs = dict(PeriodicJobState.objects.values_list("name", "runs"))
    # b's write went with its failed transaction; a's and c's stayed.
    assert runs == {"a": 1, "b": 0, "c": 1}
