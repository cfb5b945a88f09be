"""Hand-written SQL for the gateway's hot paths, read back into real model instances.

`tasks.get` (the bridge polls it) and `session.prepare` run a handful of
statements each; through the ORM, compiling a statement costs more than the
database spends answering it (bench/gateway.py). The statements are written
from the models' own table and column names, and values come back through the
fields' own database converters, so the rows are the instances the ORM would
build, on SQLite and PostgreSQL alike. Only identifiers from the models'
metadata are formatted into SQL; every value is a query parameter.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any, Generic, TypeVar

from django.db import connection
from django.db.models import Field, Model

_M = TypeVar("_M", bound=Model)


class Columns(Generic[_M]):
    """The concrete columns of one model under a table alias, and how to read them back."""

    def __init__(self, model: type[_M], alias: str) -> None:
        self.model = model
        self.alias = alias
        self.fields: list[Field[Any, Any]] = list(model._meta.concrete_fields)
        self.sql = ", ".join(f"{alias}.{connection.ops.quote_name(f.column)}" for f in self.fields)

    def build(self, values: Sequence[Any]) -> _M | None:
        """The instance for this slice of a row; None when a LEFT JOIN found nothing."""
        if values[0] is None:  # the primary key
            return None
        converted = []
        for field, value in zip(self.fields, values, strict=True):
            col = field.get_col(self.alias)
            # The converters the ORM's compiler applies (django-stubs lacks the
            # field's half): the backend's (SQLite dates...) then the field's (JSON).
            field_converters = field.get_db_converters(connection)  # type: ignore[attr-defined]
            for converter in connection.ops.get_db_converters(col) + field_converters:
                value = converter(value, col, connection)
            converted.append(value)
        return self.model.from_db(
            connection.alias, [f.attname for f in self.fields], converted
        )

    def __len__(self) -> int:
        return len(self.fields)


@cache
def columns(model: type[_M], alias: str) -> Columns[_M]:
    return Columns(model, alias)


def table(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def execute(sql: str, params: Sequence[Any]) -> tuple[Any, ...] | None:
    """Run one statement; the first row it returns, if any (RETURNING included)."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone() if cursor.description else None


def update(model: type[Model], values: dict[str, Any], where: dict[str, Any]) -> int:
    """UPDATE one model's table: `values` and `where` by field name; returns the row count."""
    sets = ", ".join(f"{_column(model, name)} = %s" for name in values)
    conditions = " AND ".join(f"{_column(model, name)} = %s" for name in where)
    params = [_db_value(model, name, value) for name, value in (*values.items(), *where.items())]
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table(model)} SET {sets} WHERE {conditions}", params)  # noqa: S608
        return int(cursor.rowcount)


def insert(model: type[_M], values: dict[str, Any]) -> _M:
    """INSERT one row (every column but the primary key) and return it as an instance."""
    names = list(values)
    placeholders = ", ".join(["%s"] * len(names))
    row = execute(
        f"INSERT INTO {table(model)} ({', '.join(_column(model, n) for n in names)}) "  # noqa: S608
        f"VALUES ({placeholders}) RETURNING {connection.ops.quote_name(model._meta.pk.column)}",
        [_db_value(model, name, value) for name, value in values.items()],
    )
    if row is None:  # pragma: no cover - RETURNING always answers one row
        raise RuntimeError(f"INSERT INTO {model._meta.db_table} returned no id")
    return model(pk=row[0], **values)


def _field(model: type[Model], name: str) -> Field[Any, Any]:
    field = model._meta.get_field(name)  # a name or, for a foreign key, its attname
    if not isinstance(field, Field):
        raise TypeError(f"{model.__name__}.{name} is not a concrete field")
    return field


def _column(model: type[Model], name: str) -> str:
    return connection.ops.quote_name(str(_field(model, name).column))


def _db_value(model: type[Model], name: str, value: Any) -> Any:
    return _field(model, name).get_db_prep_save(value, connection=connection)
