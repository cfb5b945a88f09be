"""The web server's own refusals, in the API's JSON error shape (D-K15).

gunicorn refuses some requests before the service sees them: a request line
over `limit_request_line` (4094 bytes) is 414, headers over their limits 431,
a malformed request line or header 400. It writes those as an HTML page, and
for the longest lines it cannot know whether the path was an API one: it
stopped reading before the path ended. Every answer under /api and /gateway
is JSON, so every answer of the web server is too, whatever the path: the
worker every start of the service uses (xworkmate.supervisor.WEB_WORKER_CLASS:
`make run`, the README's production command, the tests and the benchmarks)
keeps gunicorn's status and message and writes them as
`{"ok": false, "error": {"code", "message"}}`: the gateway's envelope and, with
one member more, the REST shape.
"""

from __future__ import annotations

import json
from typing import Any

from gunicorn import util  # type: ignore[import-untyped]
from gunicorn.workers.sync import SyncWorker  # type: ignore[import-untyped]

__all__ = ["JsonErrorWorker"]

_CODES = {403: "FORBIDDEN", 500: "INTERNAL_ERROR"}


def _write_json_error(sock: Any, status: int, reason: str, message: str) -> None:
    """gunicorn's `util.write_error`, with a JSON body instead of an HTML page."""
    # Imported here, in the worker, where the application (and so Django) is
    # loaded: gunicorn's master imports this module before any settings exist.
    from xworkmate.api_errors import error_body

    code = _CODES.get(status, "INVALID_REQUEST")
    detail = message or reason
    body = json.dumps(error_body(code, detail, envelope=True), separators=(",", ":")).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    util.write_nonblock(sock, head.encode("latin-1") + body)


class JsonErrorWorker(SyncWorker):  # type: ignore[misc]
    """gunicorn's sync worker whose refusals are JSON."""

    def init_process(self) -> None:
        # gunicorn picks the status and the message of a refusal and hands them to
        # util.write_error, whose only caller is the worker's handle_error: this
        # worker process writes them as JSON.
        util.write_error = _write_json_error
        super().init_process()
