"""The exceptions of the PLAN.md module."""

from __future__ import annotations

__all__ = ["PlanFileBlocked", "PlanFileError"]


class PlanFileError(ValueError):
    """A PLAN.md (or an entry, path or session) that breaks a rule; the message names
    the field or the rule, so the API and the admin can show it unchanged."""


class PlanFileBlocked(PlanFileError):
    """A write whose read-back did not verify: the archive is blocked (§5.5), never
    reported as archived. ``str(error)`` is the receipt's two lines."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"ARCHIVE_STATUS: BLOCKED\nARCHIVE_REASON: {reason}")
