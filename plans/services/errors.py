"""The plans services' errors: each names the field or the rule it refuses by."""

from __future__ import annotations

from xworkmate.lib.errors import ConflictError, InputError


class PlanError(InputError):
    """Bad input: names the field and the rule; nothing was written."""


class PlanNotFoundError(InputError):
    code = "NOT_FOUND"
    http_status = 404


class PlanGateError(ConflictError):
    """Refused by the protocol's gate (F1-F5, D-C3, D-C5); names the rule."""

    code = "REFUSED"


class PlanBlockedError(InputError):
    """The PLAN.md write did not verify: archive-protocol's BLOCKED receipt."""

    code = "BLOCKED"
    http_status = 409
