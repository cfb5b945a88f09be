"""Bounded lists: every list the service answers is one page of a documented size (D-K13).

A caller asks for a page with `limit` (how many, from 1 to the list's
maximum; the list's default when absent) and `offset` (how many to skip, from
0); the answer tells it where the next page starts, or that there is none.
Rows that come and go between two calls shift the pages: a list is ordered by
something that does not change (creation, a name), so a page never repeats
an item that has not moved, but an item created meanwhile can fall before the
offset of the next one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_LISTED_FILES", "MAX_OFFSET", "Page", "PageError", "read_page"]

# The artifact manifests (export, list, tasks.get, snapshot, the agent tool):
# a maxFiles above it lists this many, with the contract's "artifact limit
# reached" warning, as a smaller maxFiles does.
MAX_LISTED_FILES = 1000
# Far beyond any list's length; a bound keeps int() from reading a huge number.
MAX_OFFSET = 10**9


class PageError(ValueError):
    """A paging parameter out of its rule; `field` and `rule` say which and why."""

    def __init__(self, field: str, rule: str) -> None:
        super().__init__(f"{field}: {rule}")
        self.field = field
        self.rule = rule


@dataclass(frozen=True)
class Page:
    """Which slice of a list to answer."""

    limit: int
    offset: int = 0

    @property
    def end(self) -> int:
        return self.offset + self.limit

    def next_offset(self, shown: int, total: int) -> int | None:
        """Where the next page starts, after `shown` items of `total`; None on the last page."""
        return self.offset + shown if self.offset + shown < total else None

    def fields(self, shown: int, total: int) -> dict[str, Any]:
        """The paging fields of a JSON answer, as the plans list first had them."""
        following = self.next_offset(shown, total)
        return {
            "total": total,
            "offset": self.offset,
            "limit": self.limit,
            "hasMore": following is not None,
            "nextOffset": following,
        }


def _whole_number(
    query: Mapping[str, Sequence[str]], name: str, *, default: int, low: int, high: int
) -> int:
    given = query.get(name) or []
    if not given:
        return default
    if len(given) > 1:  # which one would count is not the caller's choice
        raise PageError(name, "given more than once (it takes one value)")
    raw = given[0]
    # Digits beyond the bound's are out of range anyway (int() is not asked).
    if (
        not raw.isascii()
        or not raw.isdigit()
        or len(raw.lstrip("0")) > len(str(high))
        or not low <= int(raw) <= high
    ):
        raise PageError(name, f"must be an integer from {low} to {high}")
    return int(raw)


def read_page(
    query: Mapping[str, Sequence[str]], *, default: int, maximum: int, offset: bool = True
) -> Page:
    """The page a query asks for (`limit`, and `offset` unless the list has none).

    `query` maps each parameter to the values given for it, as a query string
    holds them.
    """
    if not 1 <= default <= maximum:
        raise ValueError(f"a list's default page ({default}) must be from 1 to {maximum}")
    limit = _whole_number(query, "limit", default=default, low=1, high=maximum)
    skip = _whole_number(query, "offset", default=0, low=0, high=MAX_OFFSET) if offset else 0
    return Page(limit=limit, offset=skip)
