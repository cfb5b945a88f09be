"""sql.together on SQLite: the statements run one by one, in order, each answering its rows."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, transaction

from xworkmate import sql
from xworkmate.delivery.models import Message

pytestmark = pytest.mark.django_db

MESSAGE = sql.table(Message)


def test_each_statement_answers_its_rows_or_none_in_order():
    answers = sql.together(
        [
            (f"SELECT count(*) FROM {MESSAGE}", []),  # noqa: S608
            (f"UPDATE {MESSAGE} SET last_error = %s", ["x"]),  # noqa: S608
            ("SELECT %s, %s", ["it's", "100%"]),
        ]
    )
    assert answers == [[(0,)], None, [("it's", "100%")]]
    assert sql.together([]) == []


def test_a_failing_statement_rolls_back_the_ones_before_it_with_the_transaction():
    with pytest.raises(DatabaseError), transaction.atomic():
        sql.together([("CREATE TABLE together_probe (id integer)", []), ("SELECT nonsense", [])])
    with pytest.raises(DatabaseError):
        sql.together([("SELECT count(*) FROM together_probe", [])])


def test_one_of_and_insert_rows_are_plain_sql_here():
    # D-K36: the arrays are PostgreSQL's; elsewhere an IN list and a VALUES list.
    from django.utils import timezone

    from xworkmate.delivery.models import Attempt
    from xworkmate.delivery.services import outbox_enqueue

    ids = [
        outbox_enqueue(
            purpose="longrun.progress", target=f"agent:main:{i}", body="x",
            idempotency_key=f"k{i}", now=timezone.now(),
        ).pk
        for i in range(3)
    ]
    where, params = sql.one_of("id", ids[1:])
    assert where == "id IN (%s, %s)" and params == ids[1:]
    assert sql.together([(f"SELECT id FROM {MESSAGE} WHERE {where} ORDER BY id", params)]) == [  # noqa: S608
        [(ids[1],), (ids[2],)]
    ]
    now = timezone.now()
    sql.together(
        [
            sql.insert_rows(
                Attempt,
                ["message", "number", "channel", "started_at", "outcome", "detail", "by"],
                [[pk, 1, "hook", now, "", "", "test"] for pk in ids],
            )
        ]
    )
    assert sorted(Attempt.objects.values_list("message_id", flat=True)) == ids
