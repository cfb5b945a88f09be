"""drf-spectacular extension: how the API keys appear in the OpenAPI schema."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiKeyScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "xworkmate.auth.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An xworkmate API key: `Authorization: Bearer xwm_...`; scopes "
            "`<area>:read` / `<area>:write` for gateway, plans, longrun.",
        }
