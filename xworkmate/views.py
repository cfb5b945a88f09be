"""Admin-side views that are not model pages."""

from __future__ import annotations

from django.conf import settings
from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from xworkmate.services import user_set_language


@require_POST
@staff_member_required
def set_language(request: HttpRequest) -> HttpResponse:
    """Save the signed-in user's interface language and go back where they were."""
    language = request.POST.get("language", "")
    try:
        user_set_language(user=request.user, language=language)  # type: ignore[arg-type]
    except ValueError as exc:
        return HttpResponseBadRequest(str(exc))
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        target = "/admin/"
    response = HttpResponseRedirect(target)
    response.set_cookie(settings.LANGUAGE_COOKIE_NAME, language, samesite="Lax")
    return response
