"""The refusals a request can meet, shared by the views, the gateway methods and the engines.

`InputError` is the generic one: the request holds something the service
will not take (`INVALID_REQUEST`, HTTP 400). Its subclasses say why else a
call is refused: `ForbiddenError` (403) and `ConflictError` (409). Every door
answers them in the one error shape (xworkmate.api_errors): the gateway
dispatch, the REST views, the hooks.

The HTTP status and the wire `code` come from the exception type, never from
words in the message (D-A5); the message is the contract's text verbatim.
"""

from __future__ import annotations

__all__ = ["ConflictError", "ForbiddenError", "HostUnavailableError", "InputError"]


class InputError(Exception):
    """A refused request: `code` and `message` go to the caller as they are."""

    code: str = "INVALID_REQUEST"
    http_status: int = 400

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return self.message


class ForbiddenError(InputError):
    """The caller's key may not do this, whatever the params (an agent key's confinement)."""

    code = "FORBIDDEN"
    http_status = 403


class ConflictError(InputError):
    """The session mapping points elsewhere; the only error that maps to `CONFLICT`."""

    code = "CONFLICT"
    http_status = 409


class HostUnavailableError(InputError):
    """The workspace's host did not answer in time (D-K31): retry later, like a database
    outage (D-K22), so 503 with Retry-After; the message names the host and its queue."""

    code = "UNAVAILABLE"
    http_status = 503
