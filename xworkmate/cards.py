"""The admin landing page's cards: each app adds its own pages from AppConfig.ready() (D-K1)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.utils.functional import Promise


@dataclass(frozen=True)
class AdminCard:
    url_name: str  # reversed when the page renders, so apps may register before the URLconf
    title: str | Promise
    description: str | Promise


_CARDS: dict[str, AdminCard] = {}


def register_admin_card(card: AdminCard) -> AdminCard:
    _CARDS[card.url_name] = card
    return card


def admin_cards() -> tuple[AdminCard, ...]:
    """In registration order: the kernel's first, then each app's (INSTALLED_APPS order)."""
    return tuple(_CARDS.values())


@dataclass(frozen=True)
class AdminNotice:
    """Something a person must know at once, shown above the cards (e.g. D-K33's open breaker)."""

    url_name: str  # where to look closer
    text: str | Promise


# Each app may add a source of notices; it is asked each time the landing page renders.
NoticeSource = Callable[[], list[AdminNotice]]
_NOTICE_SOURCES: dict[str, NoticeSource] = {}


def register_admin_notices(name: str, source: NoticeSource) -> None:
    _NOTICE_SOURCES[name] = source


def admin_notices() -> list[AdminNotice]:
    return [notice for source in _NOTICE_SOURCES.values() for notice in source()]
