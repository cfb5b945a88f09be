"""Template tags of the admin landing page."""

from __future__ import annotations

from django import template
from django.urls import reverse

from xworkmate.cards import admin_cards, admin_notices

register = template.Library()


@register.simple_tag
def landing_cards() -> list[dict[str, object]]:
    """The registered cards with their URLs resolved."""
    return [
        {"url": reverse(card.url_name), "title": card.title, "description": card.description}
        for card in admin_cards()
    ]


@register.simple_tag
def landing_notices() -> list[dict[str, object]]:
    """The apps' notices for a person (an open circuit breaker, D-K33), with their URLs."""
    return [{"url": reverse(n.url_name), "text": n.text} for n in admin_notices()]
