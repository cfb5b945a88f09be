"""DATABASE_URL into Django's settings: PostgreSQL connections are bounded (D-K22)."""

from __future__ import annotations

from xworkmate.lib.dburl import POSTGRES_BOUNDS, database_settings


def test_a_postgresql_url_gets_the_connect_and_socket_bounds():
    options = database_settings("postgresql://u:p@db:5432/x")["OPTIONS"]
    assert options["connect_timeout"] == "5"
    assert options["tcp_user_timeout"] == "30000"
    assert options["keepalives"] == "1"
    assert options == POSTGRES_BOUNDS


def test_the_urls_own_parameters_win_and_are_kept():
    options = database_settings(
        "postgres://db/x?connect_timeout=2&sslmode=require"
    )["OPTIONS"]
    assert options["connect_timeout"] == "2"
    assert options["sslmode"] == "require"
    assert options["keepalives_idle"] == "30"


def test_sqlite_gets_none_of_them():
    assert "connect_timeout" not in database_settings("sqlite:////tmp/x.db")["OPTIONS"]
