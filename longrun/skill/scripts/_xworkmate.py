"""What every script of this skill shares: one call of the xworkmate long-run API (D-B21).

Each script parses the original script's flags (as the operation table,
_operations.py, declares them), sends them to its endpoint under
`/api/longrun/` and ends as the original ended: the document on stdout
(JSON with `ensure_ascii=False, indent=2`, or the lines of text), a refusal's
text on stderr, and the original's exit code, which the server sends in the
`X-Longrun-Exit-Code` header. Only the Python standard library is used, so a
script starts as fast as the original did.

Environment: XWORKMATE_URL (the server's root, e.g. http://127.0.0.1:8000)
and XWORKMATE_API_KEY (the run's agent key; the bridge's key for the runs
over every session). Exit 5 when the server is not configured, cannot be
reached, or answers something that is not its own answer.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import urllib.parse
from typing import Any, NoReturn

from _operations import API_ROOT, SCRIPTS, Operation, parser
from _render import TEXTS

EXIT_HEADER = "X-Longrun-Exit-Code"
EXIT_UNAVAILABLE = 5
TIMEOUT_SECONDS = 30.0
# A refusal without the header (a proxy's, say): the original's code for the status.
_EXIT_OF_STATUS = {404: 1, 409: 3}


def _write(stream: Any, text: str) -> None:
    """UTF-8 whatever the locale's encoding."""
    stream.flush()
    stream.buffer.write((text + "\n").encode("utf-8"))
    stream.buffer.flush()


def _unavailable(message: str) -> NoReturn:
    _write(sys.stderr, f"xworkmate: {message}")
    raise SystemExit(EXIT_UNAVAILABLE)


def call(
    method: str,
    path: str,
    *,
    query: dict[str, Any] | None = None,
    body: dict[str, Any] | None = None,
) -> tuple[int, Any]:
    """(exit code, document) of an answer; a refusal is printed and ends the script."""
    base = os.environ.get("XWORKMATE_URL", "").strip().rstrip("/")
    key = os.environ.get("XWORKMATE_API_KEY", "").strip()
    if not base or not key:
        _unavailable("set XWORKMATE_URL (the server's root) and XWORKMATE_API_KEY")
    if not base.startswith(("http://", "https://")):
        _unavailable(f"XWORKMATE_URL must be an http(s) URL (got {base!r})")
    pairs = {name: value for name, value in (query or {}).items() if value is not None}
    url = f"{base}/{API_ROOT}{path}"
    if pairs:
        url += "?" + urllib.parse.urlencode(pairs, doseq=True)
    data = (
        None
        if body is None
        else json.dumps({name: value for name, value in body.items() if value is not None}).encode(
            "utf-8"
        )
    )
    headers = {
        "Authorization": f"Bearer {key}",
        "Content-Type": "application/json",
        "Accept": "application/json",
    }
    try:
        status, answer_headers, raw = _exchange(method, url, headers, data)
    except (OSError, ValueError, IndexError) as exc:  # IndexError: no HTTP status line
        _unavailable(f"cannot reach {base}: {getattr(exc, 'reason', exc)}")
    if status >= 400:
        _refusal(status, answer_headers, raw)
    return _exit_code(answer_headers, 0), _document(raw, status)


def _exchange(
    method: str, url: str, headers: dict[str, str], data: bytes | None
) -> tuple[int, dict[str, str], bytes]:
    """One HTTP request: (status, headers with lower-case names, body).

    Plain HTTP is spoken over a socket: urllib.request and http.client import
    the email package, which costs more than the whole call (a script must
    start about as fast as the original). HTTPS goes through urllib.
    """
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "https":
        return _exchange_tls(method, url, headers, data)
    host, port = parts.hostname or "", parts.port or 80
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    lines = [f"{method} {target} HTTP/1.1", f"Host: {parts.netloc}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    lines.append(f"Content-Length: {len(data or b'')}")
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + (data or b"")
    with socket.create_connection((host, port), timeout=TIMEOUT_SECONDS) as connection:
        connection.sendall(request)
        chunks = []
        while chunk := connection.recv(65536):
            chunks.append(chunk)
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    status = int(status_line.split(" ", 2)[1])
    answer = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        answer[name.strip().lower()] = value.strip()
    if answer.get("transfer-encoding", "").lower() == "chunked":
        body = _unchunked(body)
    return status, answer, body


def _unchunked(body: bytes) -> bytes:
    out, rest = [], body
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out.append(rest[:size])
        rest = rest[size + 2 :]
    return b"".join(out)


def _exchange_tls(
    method: str, url: str, headers: dict[str, str], data: bytes | None
) -> tuple[int, dict[str, str], bytes]:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, data=data, method=method, headers=headers)  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:  # noqa: S310
            answer = {name.lower(): value for name, value in response.headers.items()}
            return response.status, answer, response.read()
    except urllib.error.HTTPError as refused:
        with refused:
            answer = {name.lower(): value for name, value in refused.headers.items()}
            return refused.code, answer, refused.read()


def _exit_code(headers: dict[str, str], default: int) -> int:
    raw = headers.get(EXIT_HEADER.lower(), "")
    return int(raw) if raw.isdigit() else default


def _document(raw: bytes, status: int) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except ValueError:
        _unavailable(f"HTTP {status} with an answer that is not JSON")


def _refusal(status: int, headers: dict[str, str], raw: bytes) -> NoReturn:
    """The script's refusal as it printed it, and its exit code."""
    body = _document(raw, status)
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    if status >= 500 or not isinstance(message, str):
        _unavailable(f"HTTP {status}: {raw[:300].decode('utf-8', 'replace')}")
    try:
        original = json.loads(message)
    except ValueError:
        original = None
    text = (
        json.dumps(original, ensure_ascii=False, indent=2)
        if isinstance(original, dict)
        else message
    )
    _write(sys.stderr, text)
    raise SystemExit(_exit_code(headers, _EXIT_OF_STATUS.get(status, 2)))


def finish(exit_code: int, document: Any) -> NoReturn:
    """Print the document as the original printed it and end with its exit code."""
    text = (
        document
        if isinstance(document, str)
        else json.dumps(document, ensure_ascii=False, indent=2)
    )
    _write(sys.stdout, text)
    raise SystemExit(exit_code)


def run_script(name: str, *, description: str | None = None) -> NoReturn:
    """Run the script `name` of the operation table with this process's arguments.

    Its parser is the table's (_operations.py, as the server's command line
    builds it), its fields go to its endpoint (a query for GET, a body for
    POST), and a report without --json is printed as its text (_render.py).
    """
    script = SCRIPTS[name]
    # Counts go to the server as given: its refusal of 0 or of more than a
    # year is the one the script prints.
    args = parser(script, {"minutes": int, "seconds": int}, description=description).parse_args()
    operation: Operation = args.operation
    fields = {
        flag.wire: getattr(args, flag.attribute) for flag in operation.flags if not flag.local
    }
    if operation.method == "GET":
        code, document = call("GET", str(operation.path), query=fields)
    else:
        code, document = call(str(operation.method), str(operation.path), body=fields)
    if operation.render is not None and not args.json:
        document = TEXTS[operation.render](document)
    finish(code, document)
