"""The admin landing page's cards: each app adds its own pages from AppConfig.ready() (D-K1)."""

from __future__ import annotations

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
