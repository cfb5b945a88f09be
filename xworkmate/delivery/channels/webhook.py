"""The webhook channel: one HTTP POST of a documented JSON body per attempt.

The body (compact JSON, UTF-8, keys always in this order)::

    {"id":42,"purpose":"plans.run","sessionKey":"agent:main:main","message":"…",
     "messageHash":"<sha-256 hex of the message's UTF-8 bytes>",
     "idempotencyKey":"…","attempt":1,"createdAt":"2026-03-10T01:00:00.123Z"}

`createdAt` is when the message was queued, as JavaScript's `toISOString()`
prints it; `attempt` counts from 1.

The headers: `Content-Type: application/json`, `Idempotency-Key: <idempotencyKey>`,
`User-Agent: xworkmate-delivery`, `Accept-Encoding: identity`, and, when the
channel has a secret::

    X-Xworkmate-Timestamp: <unix seconds>
    X-Xworkmate-Signature: v1=<hex HMAC-SHA256(secret, "<timestamp>." + body bytes)>

The signature covers the exact bytes sent, so a receiver checks it on the raw
body before parsing it, with `verify_signature` (or the same few stdlib lines),
and refuses timestamps more than five minutes away from its clock.

De-duplication (`deduplicates = True`): every attempt of one message carries the
same `Idempotency-Key` (header and body), and the receiver is expected to act
on a key once and answer 2xx again for a repeat. That is what allows a message
whose outcome was UNKNOWN to be sent again: a receiver that does not
de-duplicate may see such a message twice.

Outcomes (channels.base, D-B10): a 2xx answer is SENT; a connect timeout, a
refused connection or a name that does not resolve is FAILED (nothing was
sent); a read or write timeout, or a connection dropped after the request was
written, is UNKNOWN; any other status is FAILED with `HTTP <status>: <start of
the answer>`. Redirects are not followed (a 3xx is FAILED). The channel goes
straight to the URL: proxy settings and `.netrc` of the environment are
ignored (pass a configured `client` to change that).

Plain Python: only the standard library, httpx and xworkmate.lib.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator

import httpx

from xworkmate.lib.jstime import wire_time

from .base import DETAIL_LIMIT, Envelope, Outcome, Result

__all__ = ["SIGNATURE_TOLERANCE", "WebhookChannel", "sign", "verify_signature"]

# How far (seconds) a signed timestamp may be from the receiver's clock, either way.
SIGNATURE_TOLERANCE = 300

_USER_AGENT = "xworkmate-delivery"
_SCHEME = "v1="
# More digits than any plausible unix time: refused before int() sees them.
_MAX_TIMESTAMP_DIGITS = 12


def sign(*, secret: str, timestamp: str, body: bytes) -> str:
    """The `X-Xworkmate-Signature` value for `body` sent at `timestamp` (unix seconds)."""
    mac = hmac.new(secret.encode("utf-8"), timestamp.encode("ascii") + b"." + body, hashlib.sha256)
    return _SCHEME + mac.hexdigest()


def verify_signature(
    *,
    secret: str,
    timestamp: str,
    body: bytes,
    signature: str,
    now: float | None = None,
    tolerance: int = SIGNATURE_TOLERANCE,
) -> bool:
    """Whether `signature` is this channel's signature of `body` at a recent `timestamp`.

    For a receiver: pass the two headers as received and the raw body bytes (before
    any JSON parsing). False for an empty secret, a timestamp that is not plain
    digits or is more than `tolerance` seconds from `now` (default: the clock), and
    any signature that is not `v1=<hex>` of the right HMAC; the comparison takes the
    same time wherever the first difference is.
    """
    if not secret:
        return False
    if not (timestamp.isascii() and timestamp.isdigit()) or len(timestamp) > _MAX_TIMESTAMP_DIGITS:
        return False
    current = time.time() if now is None else now
    if abs(current - int(timestamp)) > tolerance:
        return False
    expected = sign(secret=secret, timestamp=timestamp, body=body)
    return hmac.compare_digest(expected.encode("ascii"), signature.strip().encode("utf-8"))


def _encode(envelope: Envelope) -> bytes:
    payload = {
        "id": envelope.message_id,
        "purpose": envelope.purpose,
        "sessionKey": envelope.target,
        "message": envelope.body,
        "messageHash": envelope.body_hash,
        "idempotencyKey": envelope.idempotency_key,
        "attempt": envelope.attempt,
        "createdAt": wire_time(envelope.created_at),
    }
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8")


def _why(what: str, exc: BaseException) -> str:
    reason = str(exc).strip()
    kind = type(exc).__name__
    return f"{what} ({kind}: {reason})" if reason else f"{what} ({kind})"


class WebhookChannel:
    """Delivers a message by POSTing it to one URL (see the module for the contract)."""

    kind = "webhook"
    deduplicates = True

    def __init__(
        self,
        *,
        name: str,
        url: str,
        secret: str = "",
        connect_timeout: float = 5.0,
        read_timeout: float = 10.0,
        client: httpx.Client | None = None,
    ) -> None:
        parsed = httpx.URL(url)  # a malformed URL is a configuration error: raised here
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise ValueError(f"webhook channel {name!r}: the URL must be http(s)://host/...")
        self.name = name
        self.url = url
        self._secret = secret
        # A write is bounded like a read; waiting for a pooled connection like a connect.
        self._timeout = httpx.Timeout(
            connect=connect_timeout, read=read_timeout, write=read_timeout, pool=connect_timeout
        )
        self._given = client
        # Without a given client, each send borrows a client of its own from a free list
        # and gives it back: a batch sends from several threads at once, and one shared
        # pool would have every request take its lock and look at each of its idle
        # connections (a poll() each) before choosing one (bench/delivery.py, D-K34).
        # The list holds as many clients as sends were ever in flight at once, each
        # keeping its connection alive for the next send.
        self._idle: list[httpx.Client] = []
        self._made: list[httpx.Client] = []
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def _borrowed(self) -> Iterator[httpx.Client]:
        if self._given is not None:
            yield self._given
            return
        with self._lock:
            client = self._idle.pop() if self._idle else None
        if client is None:
            client = httpx.Client(timeout=self._timeout, follow_redirects=False, trust_env=False)
            with self._lock:
                self._made.append(client)
        try:
            yield client
        finally:
            with self._lock:
                self._idle.append(client)

    def close(self) -> None:
        """Close the HTTP clients the channel made (a given client is the caller's)."""
        with self._lock:
            made, self._made, self._idle = self._made, [], []
        for client in made:
            client.close()

    def __repr__(self) -> str:  # neither the secret nor a token the URL may carry
        return f"WebhookChannel(name={self.name!r}, host={httpx.URL(self.url).host!r})"

    def headers(
        self, envelope: Envelope, body: bytes, *, now: float | None = None
    ) -> dict[str, str]:
        """The headers one attempt is sent with (signed when the channel has a secret)."""
        headers = {
            "Content-Type": "application/json",
            "Idempotency-Key": envelope.idempotency_key,
            "User-Agent": _USER_AGENT,
            # The start of an error answer is kept as text: ask for it uncompressed.
            "Accept-Encoding": "identity",
        }
        if self._secret:
            timestamp = str(int(time.time() if now is None else now))
            headers["X-Xworkmate-Timestamp"] = timestamp
            headers["X-Xworkmate-Signature"] = sign(
                secret=self._secret, timestamp=timestamp, body=body
            )
        return headers

    def send(self, envelope: Envelope) -> Result:
        try:
            body = _encode(envelope)
        except UnicodeEncodeError as exc:  # a lone surrogate: no UTF-8 form to send
            return Result(Outcome.FAILED, _why("the message is not valid Unicode text", exc))
        try:
            envelope.idempotency_key.encode("ascii")  # a header value: ASCII only
            headers = self.headers(envelope, body)
        except UnicodeEncodeError as exc:
            return Result(Outcome.FAILED, _why("the idempotency key or secret cannot be sent", exc))
        answer: Result | None = None
        try:
            with self._borrowed() as client, client.stream(
                "POST", self.url, content=body, headers=headers, timeout=self._timeout
            ) as response:
                answer = _judge(response)
                return answer
        except (httpx.HTTPError, httpx.InvalidURL, OSError) as exc:
            # An answer already judged stands even if closing the connection then failed.
            return answer if answer is not None else _failure(exc)


def _judge(response: httpx.Response) -> Result:
    status = response.status_code
    if 200 <= status < 300:
        # Confirmed by the status line. A little of the answer is read only so that the
        # connection can be used again; that read may fail without changing anything.
        _read_start(response)
        return Result(Outcome.SENT, f"HTTP {status}")
    start = _read_start(response).decode("utf-8", errors="replace")
    return Result(Outcome.FAILED, f"HTTP {status}: {start}" if start else f"HTTP {status}")


def _failure(exc: Exception) -> Result:
    """The outcome of a request that raised before an answer (see the module)."""
    # Nothing left this machine: no connection, or no request that could be formed.
    if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
        return Result(Outcome.FAILED, _why("no connection within the connect timeout", exc))
    if isinstance(exc, httpx.ConnectError):  # refused, unreachable, name not resolved, TLS
        return Result(Outcome.FAILED, _why("could not connect", exc))
    if isinstance(
        exc,
        httpx.UnsupportedProtocol | httpx.LocalProtocolError | httpx.ProxyError | httpx.InvalidURL,
    ):
        return Result(Outcome.FAILED, _why("the request could not be sent", exc))
    # The request was, or may have been, written: the receiver may have it.
    if isinstance(exc, httpx.ReadTimeout | httpx.WriteTimeout):
        return Result(Outcome.UNKNOWN, _why("no answer within the timeout", exc))
    if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError):
        return Result(Outcome.UNKNOWN, _why("the connection ended without an answer", exc))
    # Anything else: it cannot be told whether the request went out, so not FAILED.
    return Result(Outcome.UNKNOWN, _why("the request ended in an unexpected error", exc))


def _read_start(response: httpx.Response) -> bytes:
    """Up to DETAIL_LIMIT bytes of the answer (all of a short one, so the connection is reused)."""
    data = b""
    try:
        for chunk in response.iter_raw():
            data += chunk
            if len(data) >= DETAIL_LIMIT:
                break
    except (httpx.HTTPError, OSError):
        pass  # what arrived before the break is kept
    return data[:DETAIL_LIMIT]
