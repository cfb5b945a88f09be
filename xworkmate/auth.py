"""Bearer API keys for DRF: authentication, and scope permissions.

A request carries `Authorization: Bearer xwm_...`. Unknown or revoked keys
get 401; a valid key without the scope a view needs gets 403. Scopes are
`<area>:read` / `<area>:write` for gateway, plans and longrun; write implies
read (xworkmate.policies.scope_allows).
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from xworkmate.models import ApiKey
from xworkmate.policies import last_used_is_stale, scope_allows
from xworkmate.selectors import api_key_for_token
from xworkmate.services import api_key_touch


class ApiKeyPrincipal:
    """What `request.user` is for a key-authenticated call (not a Django user)."""

    is_authenticated = True
    is_anonymous = False
    is_staff = False

    def __init__(self, key: ApiKey) -> None:
        self.key = key

    def __str__(self) -> str:
        return f"api-key:{self.key.name}"


class ApiKeyAuthentication(BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[ApiKeyPrincipal, ApiKey] | None:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != self.keyword.lower():
            return None  # not ours: other authenticators (or none) decide
        token = token.strip()
        if not token:
            raise AuthenticationFailed("Authorization header has no API key after 'Bearer'")
        key = api_key_for_token(token)
        if key is None:
            raise AuthenticationFailed("invalid API key")
        if not key.is_active:
            raise AuthenticationFailed("API key has been revoked")
        now = timezone.now()
        # The row just read says whether the last use is stale; only then is
        # there anything to write (D-K8), so most calls take no write lock.
        if last_used_is_stale(key.last_used_at, now):
            api_key_touch(key=key, now=now)
        return ApiKeyPrincipal(key), key

    def authenticate_header(self, request: Request) -> str:
        # Present so DRF answers 401 (not 403) to calls without credentials.
        return 'Bearer realm="xworkmate"'


def request_key(request: Request) -> ApiKey | None:
    auth = request.auth
    return auth if isinstance(auth, ApiKey) else None


def key_has_scope(request: Request, scope: str) -> bool:
    key = request_key(request)
    return key is not None and scope_allows(list(key.scopes), scope)


class DenyAll(BasePermission):
    """The default: a view that forgets to declare its permission serves nobody."""

    def has_permission(self, request: Request, view: Any) -> bool:
        return False


class HasScope(BasePermission):
    """Requires the key to carry `view.required_scope` (or its write twin)."""

    message = "API key lacks the required scope"

    def has_permission(self, request: Request, view: Any) -> bool:
        scope: str = view.required_scope
        if request_key(request) is None:
            return False
        if not key_has_scope(request, scope):
            self.message = f"API key lacks scope {scope}"
            return False
        return True


class ApiKeyOrStaff(BasePermission):
    """Any valid API key, or a signed-in staff user (the schema and docs pages)."""

    def has_permission(self, request: Request, view: Any) -> bool:
        if request_key(request) is not None:
            return True
        user = request.user
        return bool(user is not None and user.is_authenticated and user.is_staff)
