"""The language of each answer.

- The admin: a signed-in user's saved choice wins over the browser's, and
  `service.language_code` is the default.
- The API (`/api/...`, `/gateway...`): English unless the request's
  `Accept-Language` asks for another supported language. Clients parse and
  log these messages; DRF's own ones (authentication, field limits) must not
  arrive in the admin's language next to the service's English ones, and a
  browser's language cookie or a staff user's admin preference does not apply.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.utils import translation
from django.utils.translation.trans_real import parse_accept_lang_header

from xworkmate.api_errors import is_api_path
from xworkmate.models import UserPreference

API_DEFAULT_LANGUAGE = "en"


def api_language(accept_language: str) -> str:
    """The first supported language the header accepts (by its q-values), else English."""
    for code, _quality in parse_accept_lang_header(accept_language):
        if code == "*":
            break
        try:
            return translation.get_supported_language_variant(code)
        except LookupError:
            continue
    return API_DEFAULT_LANGUAGE


class UserLanguageMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if is_api_path(request.path):
            language = api_language(request.headers.get("Accept-Language", ""))
            translation.activate(language)
            request.LANGUAGE_CODE = language
            return self.get_response(request)
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            saved = (
                UserPreference.objects.filter(user=user).values_list("language", flat=True).first()
            )
            if saved:
                translation.activate(saved)
                request.LANGUAGE_CODE = saved
        return self.get_response(request)
