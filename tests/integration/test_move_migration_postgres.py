"""D-K4 on PostgreSQL: the gateway's rows survive the move of its models, as on SQLite."""

from __future__ import annotations

from django.db import connection

from tests.gateway import test_move_migration as move


def test_it_keeps_the_rows_written_before_the_move_on_postgresql(real_services):
    assert connection.vendor == "postgresql"
    move.test_it_keeps_the_rows_written_before_the_move()


def test_the_move_changes_no_table_on_postgresql(real_services):
    assert connection.vendor == "postgresql"
    move.test_the_move_changes_no_table()
