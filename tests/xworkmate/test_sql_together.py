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
