"""sql.columns: the rows a hand-written statement reads back are the ORM's instances."""

from __future__ import annotations

import pytest
from django.db import connection
from django.utils import timezone

from xworkmate import sql
from xworkmate.delivery.models import Message

pytestmark = pytest.mark.django_db


def _message() -> Message:
    return Message.objects.create(
        purpose="longrun.progress",
        channel="hook",
        target="agent:main:s1",
        body="正在看",
        body_hash="h",
        idempotency_key="k1",
        next_attempt_at=timezone.now(),
    )


def test_only_reads_back_those_fields_into_the_right_attributes_whatever_their_order():
    # Model.from_db takes a partial row's values in the model's field order: asked in
    # another order, a naive reader would put the purpose into `channel` (D-K43).
    stored = _message()
    cols = sql.columns(Message, "m", only=("id", "target", "channel", "created_at", "purpose"))
    assert [f.name for f in cols.fields] == ["id", "purpose", "channel", "target", "created_at"]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {cols.sql} FROM {sql.table(Message)} m")  # noqa: S608
        [row] = cursor.fetchall()
    read = cols.build(row)
    assert read is not None
    assert (read.pk, read.purpose, read.channel, read.target, read.created_at) == (
        stored.pk,
        "longrun.progress",
        "hook",
        "agent:main:s1",
        stored.created_at,
    )
    assert read.get_deferred_fields() >= {"body", "status", "claim_expires_at"}


def test_without_only_every_concrete_column_is_read():
    stored = _message()
    cols = sql.columns(Message, "m")
    assert len(cols) == len(Message._meta.concrete_fields)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {cols.sql} FROM {sql.table(Message)} m")  # noqa: S608
        [row] = cursor.fetchall()
    read = cols.build(row)
    assert read is not None and read.get_deferred_fields() == set()
    assert (read.body, read.next_attempt_at) == (stored.body, stored.next_attempt_at)
