"""Admin sign-in throttling (D-K14): the address django-axes counts by, and the lockout page.

django-axes (configured in xworkmate.settings) counts the admin login form's
failed sign-ins per username and client address; these are the two hooks it
calls back into.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from xworkmate.config import REMOTE_ADDR
from xworkmate.config.kernel import ADMIN

LOCKOUT_TEMPLATE = "admin/xworkmate_locked_out.html"


def _address(raw: object) -> str | None:
    """`raw` as one normalised IP address, or None if it is not one.

    An IPv6 zone (`fe80::1%eth0`) is refused too: PostgreSQL's inet column,
    where the count is stored, cannot hold it, and a client could otherwise
    turn its sign-in into a database error.
    """
    if not isinstance(raw, str):
        return None
    try:
        address = ipaddress.ip_address(raw.strip())
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.scope_id:
        return None
    return str(address)


def _client_address(meta: Mapping[str, Any], header: str) -> str | None:
    """The client's address: the connection's peer, or the configured proxy header.

    Of a list (`X-Forwarded-For: client, proxy-1`) the right-most entry counts:
    it is the one the proxy in front of the service added; everything left of
    it came from the client and could be anything. A request without a usable
    header value (one that did not come through the proxy) counts under its
    peer address, never under a name the client chose.
    """
    if header != REMOTE_ADDR:
        value = meta.get("HTTP_" + header.upper().replace("-", "_"))
        if isinstance(value, str) and (found := _address(value.rsplit(",", 1)[-1])):
            return found
    return _address(meta.get(REMOTE_ADDR))


def client_ip(request: HttpRequest) -> str | None:
    """AXES_CLIENT_IP_CALLABLE: read as `admin.client_ip_header` says."""
    return _client_address(request.META, ADMIN.of(settings.XWORKMATE).client_ip_header)


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None, credentials: Any
) -> HttpResponse:
    """AXES_LOCKOUT_CALLABLE: the admin's own page, in the visitor's language, as a 429."""
    cooloff: timedelta = settings.AXES_COOLOFF_TIME
    seconds = math.ceil(cooloff.total_seconds())
    context = {
        **admin.site.each_context(request),
        "failure_limit": settings.AXES_FAILURE_LIMIT,
        "minutes": math.ceil(seconds / 60),
    }
    response = render(request, LOCKOUT_TEMPLATE, context, status=429)
    response["Retry-After"] = str(seconds)
    return response
