"""The errors a gateway method raises, shared by the gateway views and the engines.

The HTTP status and the wire `code` come from the exception type, never from
words in the message (D-A5); the message is the contract's text verbatim.
"""

from __future__ import annotations

__all__ = ["ConflictError", "ForbiddenError", "GatewayError"]


class GatewayError(Exception):
    """A refused gateway call: `code` and `message` go to the caller as they are."""

    code: str = "INVALID_REQUEST"
    http_status: int = 400

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return self.message


class ForbiddenError(GatewayError):
    """The caller's key may not do this, whatever the params (an agent key's confinement)."""

    code = "FORBIDDEN"
    http_status = 403


class ConflictError(GatewayError):
    """The session mapping points elsewhere; the only error that maps to `CONFLICT`."""

    code = "CONFLICT"
    http_status = 409
