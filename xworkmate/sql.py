"""Hand-written SQL for the hot paths, read back into real model instances.

The gateway's `tasks.get` (the bridge polls it) and `session.prepare`, and
long-run mode's heartbeat reports, run a handful of statements each; through
the ORM, compiling a statement costs more than the database spends answering
it (bench/gateway.py, bench/longrun.py). The statements are written
from the models' own table and column names, and values come back through the
fields' own database converters, so the rows are the instances the ORM would
build, on SQLite and PostgreSQL alike. Only identifiers from the models'
metadata are formatted into SQL; every value is a query parameter.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import cache
from typing import Any, Generic, TypeVar

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, Model

_M = TypeVar("_M", bound=Model)


class Columns(Generic[_M]):
    """The concrete columns of one model under a table alias, and how to read them back.

    `only`: these fields alone (the primary key among them), for a statement whose
    reader needs a few: each column read back costs its conversion, and a
    timestamp's is dear. The instances built then defer the others, as the
    ORM's `only()` does.
    """

    def __init__(self, model: type[_M], alias: str, only: tuple[str, ...] = ()) -> None:
        self.model = model
        self.alias = alias
        # In the model's order, whatever the order of `only`: Model.from_db reads
        # the values of a partial row in that order.
        self.fields: list[Field[Any, Any]] = [
            field
            for field in model._meta.concrete_fields
            if not only or field.name in only or field.attname in only
        ]
        self.sql = ", ".join(f"{alias}.{connection.ops.quote_name(f.column)}" for f in self.fields)
        self._attnames = [f.attname for f in self.fields]
        # The converters the ORM's compiler applies (django-stubs lacks the
        # field's half): the backend's (SQLite dates...) then the field's (JSON).
        # Looked up once: asking for them costs more than reading a row.
        self._converters: list[tuple[Any, list[Any]]] = []
        for field in self.fields:
            col = field.get_col(alias)
            field_converters = field.get_db_converters(connection)  # type: ignore[attr-defined]
            converters = connection.ops.get_db_converters(col) + field_converters
            self._converters.append((col, converters))

    def build(self, values: Sequence[Any]) -> _M | None:
        """The instance for this slice of a row; None when a LEFT JOIN found nothing."""
        if values[0] is None:  # the primary key
            return None
        db = _db()
        converted = []
        for (col, converters), value in zip(self._converters, values, strict=True):
            for converter in converters:
                value = converter(value, col, db)
            converted.append(value)
        return self.model.from_db(db.alias, self._attnames, converted)

    def __len__(self) -> int:
        return len(self.fields)


@cache
def columns(model: type[_M], alias: str, only: tuple[str, ...] = ()) -> Columns[_M]:
    return Columns(model, alias, only)


def table(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _fetch_one(sql: str, params: Sequence[Any]) -> tuple[Any, ...] | None:
    """Run a statement that answers rows (a SELECT, or RETURNING); its first row, if any."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row: tuple[Any, ...] | None = cursor.fetchone()
        return row


Statement = tuple[str, Sequence[Any]]


def together(statements: Sequence[Statement]) -> list[list[tuple[Any, ...]] | None]:
    """Run `statements` in order, in the caller's transaction; the rows each answered
    (None for one that answers none, an UPDATE without RETURNING).

    On PostgreSQL they reach the server as one query text, answered in one round
    trip: Django's psycopg cursor binds the values on this side, where a
    statement-by-statement exchange would cost a round trip each (D-K35: in a
    worker whose other threads keep the interpreter's lock busy, each round trip
    also waits for that lock once more). Elsewhere, or with a cursor that binds on
    the server, one by one.
    """
    if not statements:
        return []
    with connection.cursor() as cursor:
        if len(statements) == 1 or not _binds_here(cursor):
            answers: list[list[tuple[Any, ...]] | None] = []
            for text, params in statements:
                cursor.execute(text, params)
                answers.append(cursor.fetchall() if cursor.description is not None else None)
            return answers
        cursor.execute(
            "; ".join(text for text, _ in statements),
            [value for _, params in statements for value in params],
        )
        answers = []
        for _ in statements:
            answers.append(cursor.fetchall() if cursor.description is not None else None)
            cursor.nextset()
        return answers


def one_of(column: str, values: Sequence[Any]) -> Statement:
    """`column` is one of `values`, as a condition and its parameters.

    On PostgreSQL one array parameter (`= ANY(%s)`), so the statement's text is the
    same however many values it carries: psycopg then parses it once and keeps it
    (its cache takes a text of at most 50 parameters), where an `IN (%s, ...)` of
    another length each time cost a parse of the whole text, a third of a delivery
    step's CPU (D-K36). Elsewhere `IN (...)`.
    """
    if connection.vendor == "postgresql":
        return f"{column} = ANY(%s)", [list(values)]
    return f"{column} IN ({', '.join(['%s'] * len(values))})", list(values)


def insert_rows(
    model: type[Model], fields: Sequence[str], rows: Sequence[Sequence[Any]]
) -> Statement:
    """An INSERT into `model`'s table of `rows` (values in the order of `fields`,
    already adapted for the database), one statement whatever their number.

    On PostgreSQL one array parameter a column, unnested (D-K36: a text that stays
    the same, as one_of), each cast to its column's type; elsewhere a VALUES list.
    """
    head = f"INSERT INTO {table(model)} ({', '.join(_column(model, n) for n in fields)})"
    if connection.vendor == "postgresql":
        arrays = ", ".join(f"%s::{_cast_type(model, n)}[]" for n in fields)
        return f"{head} SELECT * FROM unnest({arrays})", [  # noqa: S608
            [row[i] for row in rows] for i in range(len(fields))
        ]
    one = "(" + ", ".join(["%s"] * len(fields)) + ")"
    return f"{head} VALUES {', '.join([one] * len(rows))}", [v for row in rows for v in row]


def _binds_here(cursor: Any) -> bool:
    """Whether the cursor sends values inside the query text (psycopg's ClientCursor,
    Django's default on PostgreSQL), which is what lets several statements share one."""
    if connection.vendor != "postgresql":
        return False
    import psycopg  # only where the backend is PostgreSQL

    return isinstance(cursor.cursor, psycopg.ClientCursor)


def _lock_clause() -> str:
    """The row-lock suffix of a SELECT: none on SQLite, whose IMMEDIATE transactions
    lock the whole database instead."""
    return " FOR UPDATE" if connection.features.has_select_for_update else ""


def select_locked(model: type[_M], where: str, params: Sequence[Any]) -> _M | None:
    """The first row of `model` matching `where` (SQL over the alias `t`), locked
    for the rest of the transaction; None when no row matches."""
    cols = columns(model, "t")
    row = _fetch_one(
        f"SELECT {cols.sql} FROM {table(model)} t WHERE {where}{_lock_clause()}",  # noqa: S608
        params,
    )
    return cols.build(row) if row is not None else None


def lock_name(name: str) -> None:
    """Hold a lock on `name` until the transaction ends; another transaction locking
    the same name waits for it.

    For a rule no row lock covers: a count that an insert would change. On
    PostgreSQL a transaction-level advisory lock on a 64-bit digest of the name;
    SQLite needs none, its IMMEDIATE transactions hold the whole database.
    """
    if connection.vendor != "postgresql":
        return
    digest = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [digest])


def has_row_versions() -> bool:
    """Whether rows carry a version a later write always changes (PostgreSQL's xmin)."""
    return connection.vendor == "postgresql"


def select_versioned(model: type[_M], where: str, params: Sequence[Any]) -> tuple[_M, str] | None:
    """The first row of `model` matching `where` (SQL over the alias `t`), read
    without a lock, with its version; None when no row matches.

    The version is PostgreSQL's xmin, the transaction that wrote this version
    of the row: any later UPDATE, by the ORM or by hand, gives the row a new
    one. Only where has_row_versions().
    """
    cols = columns(model, "t")
    row = _fetch_one(
        f"SELECT t.xmin::text, {cols.sql} FROM {table(model)} t WHERE {where}",  # noqa: S608
        params,
    )
    if row is None:
        return None
    instance = cols.build(row[1:])
    if instance is None:  # pragma: no cover - a row that exists has a primary key
        raise RuntimeError(f"a {model.__name__} row without a primary key")
    return instance, str(row[0])


def update_versioned_with_insert(
    model: type[Model],
    pk: Any,
    version: str,
    values: dict[str, Any],
    inserted: type[Model],
    row: dict[str, Any],
) -> bool:
    """In one statement: UPDATE row `pk` of `model` to `values` if it is still
    `version` (select_versioned), and INSERT `row` into `inserted` if it was;
    whether they happened (both or neither).

    A write committed since the read makes it answer False; one still holding
    the row makes it wait, then answer False if that write committed (READ
    COMMITTED re-checks the condition on the newest version of the row).
    Each inserted value is cast to its column's type: a bare literal in a
    SELECT list would be read as text.
    """
    sets = ", ".join(f"{_column(model, name)} = %s" for name in values)
    pk_column = connection.ops.quote_name(model._meta.pk.column)
    names = list(row)
    casts = ", ".join(f"%s::{_cast_type(inserted, name)}" for name in names)
    db = _db()
    params = [
        *(_db_value(model, name, value, db) for name, value in values.items()),
        pk,
        version,
        *(_db_value(inserted, name, value, db) for name, value in row.items()),
    ]
    statement = (
        f"WITH changed AS (UPDATE {table(model)} SET {sets} "  # noqa: S608
        f"WHERE {pk_column} = %s AND xmin = %s::xid RETURNING 1) "
        f"INSERT INTO {table(inserted)} ({', '.join(_column(inserted, n) for n in names)}) "
        f"SELECT {casts} FROM changed RETURNING 1"
    )
    return _fetch_one(statement, params) is not None


def update(model: type[Model], values: dict[str, Any], where: dict[str, Any]) -> int:
    """UPDATE one model's table: `values` and `where` by field name; returns the row count."""
    sets = ", ".join(f"{_column(model, name)} = %s" for name in values)
    conditions = " AND ".join(f"{_column(model, name)} = %s" for name in where)
    db = _db()
    params = [
        _db_value(model, name, value, db) for name, value in (*values.items(), *where.items())
    ]
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table(model)} SET {sets} WHERE {conditions}", params)  # noqa: S608
        return int(cursor.rowcount)


def insert(model: type[_M], values: dict[str, Any]) -> _M:
    """INSERT one row (every column but the primary key) and return it as an instance."""
    names = list(values)
    placeholders = ", ".join(["%s"] * len(names))
    db = _db()
    row = _fetch_one(
        f"INSERT INTO {table(model)} ({', '.join(_column(model, n) for n in names)}) "  # noqa: S608
        f"VALUES ({placeholders}) RETURNING {connection.ops.quote_name(model._meta.pk.column)}",
        [_db_value(model, name, value, db) for name, value in values.items()],
    )
    if row is None:  # pragma: no cover - RETURNING always answers one row
        raise RuntimeError(f"INSERT INTO {model._meta.db_table} returned no id")
    return model(pk=row[0], **values)


@cache
def _field(model: type[Model], name: str) -> Field[Any, Any]:
    field = model._meta.get_field(name)  # a name or, for a foreign key, its attname
    if not isinstance(field, Field):
        raise TypeError(f"{model.__name__}.{name} is not a concrete field")
    return field


@cache
def _column(model: type[Model], name: str) -> str:
    return connection.ops.quote_name(str(_field(model, name).column))


@cache
def _cast_type(model: type[Model], name: str) -> str:
    # The column's type without its modifier: a cast to varchar(16) would cut a
    # longer value short where the INSERT must refuse it, as a plain one does.
    return re.sub(r"\(.*\)", "", str(_field(model, name).db_type(connection))).strip()


def _db() -> BaseDatabaseWrapper:
    """This thread's connection itself: the `connection` proxy looks it up on every use."""
    return connections[DEFAULT_DB_ALIAS]


def _db_value(model: type[Model], name: str, value: Any, db: BaseDatabaseWrapper) -> Any:
    return _field(model, name).get_db_prep_save(value, connection=db)
