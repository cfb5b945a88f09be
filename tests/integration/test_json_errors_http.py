"""No answer under /api or /gateway is HTML, over real HTTP through gunicorn (D-K15).

gunicorn refuses some requests before the service sees them (a request line
over 4094 bytes, headers over its limits, a malformed request line or
header) and, left alone, writes an HTML page. The worker every start of the
service uses answers those in the API's JSON error shape instead; Django's own
refusals around the views (no route, a method a view lacks, a bad Host) are the
root URLconf's JSON handlers. The requests go over a raw socket: an HTTP
client library would not send most of them.
"""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import running_gunicorn
from xworkmate.services import api_key_create


@pytest.fixture
def port(real_services: None, tmp_path: Path) -> Iterator[int]:
    with running_gunicorn(tmp_path, "", workers=1) as base:
        yield int(base.rsplit(":", 1)[1])


def _exchange(port: int, request: bytes) -> tuple[int, str, Any]:
    """Send raw bytes; the answer's status, Content-Type and JSON body."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request)
        response = http.client.HTTPResponse(sock)
        response.begin()
        raw = response.read()
    content_type = response.getheader("Content-Type", "")
    assert content_type.startswith("application/json"), (response.status, raw[:300])
    return response.status, content_type, json.loads(raw)


def _get(target: bytes, *headers: bytes) -> bytes:
    return b"\r\n".join([b"GET " + target + b" HTTP/1.1", b"Host: 127.0.0.1", *headers, b"", b""])


def _refusal(message: str) -> dict[str, Any]:
    return {"ok": False, "error": {"code": "INVALID_REQUEST", "message": message}}


@pytest.mark.parametrize(
    ("request_bytes", "status", "message"),
    [
        (_get(b"/api/ping?q=" + b"a" * 5000), 414, "Request Line is too large (5025 > 4094)"),
        # Past 8190 bytes gunicorn stops reading the line: still JSON, the path unknown.
        (_get(b"/gateway/xworkmate.tasks.get?q=" + b"a" * 50000), 414,
         "Request Line is too large (8192 > 4094)"),
        (_get(b"/api/ping", b"X-Long: " + b"a" * 9000), 431,
         "Error parsing headers: 'limit request headers fields size'"),
        (_get(b"/api/ping", *(b"X-Header-%d: a" % i for i in range(120))), 431,
         "Error parsing headers: 'limit request headers fields'"),
        (b"NOT HTTP AT ALL\r\n\r\n", 400,
         "Invalid Request Line 'Invalid HTTP request line: 'NOT HTTP AT ALL''"),
        (_get(b"/api/ping", b"Content-Length: abc"), 400, "Invalid HTTP Header: 'CONTENT-LENGTH'"),
    ],
)
def test_it_answers_the_web_servers_own_refusals_in_json(port, request_bytes, status, message):
    assert _exchange(port, request_bytes)[::2] == (status, _refusal(message))


def test_it_answers_djangos_refusals_under_api_and_gateway_in_json(port):
    _, token = api_key_create(name="bridge", scopes=["gateway:read"])
    auth = b"Authorization: Bearer " + token.encode()
    status, _, body = _exchange(port, _get(b"/api/nothing-here", auth))
    assert (status, body["error"]["code"]) == (404, "NOT_FOUND")
    request = b"DELETE /api/ping HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth + b"\r\n\r\n"
    status, _, body = _exchange(port, request)
    assert (status, body["error"]["code"]) == (405, "METHOD_NOT_ALLOWED")
    status, _, body = _exchange(port, _get(b"/api/ping"))
    assert (status, body["error"]["code"]) == (401, "UNAUTHORIZED")
    # A Host the service does not serve: refused before any view, in the envelope
    # under /gateway.
    request = b"POST /gateway HTTP/1.1\r\nHost: elsewhere.example\r\nContent-Length: 0\r\n\r\n"
    status, _, body = _exchange(port, request)
    assert (status, body["ok"], body["error"]["code"]) == (400, False, "INVALID_REQUEST")
