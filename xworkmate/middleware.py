"""Per-user admin language: a signed-in user's saved choice wins over the browser's."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.utils import translation

from xworkmate.models import UserPreference


class UserLanguageMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            language = (
                UserPreference.objects.filter(user=user).values_list("language", flat=True).first()
            )
            if language:
                translation.activate(language)
                request.LANGUAGE_CODE = language
        return self.get_response(request)
