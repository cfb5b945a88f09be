"""The webhook channel against real HTTP servers on 127.0.0.1 (no mock of httpx).

A well-behaved receiver is an `http.server.ThreadingHTTPServer` that each test
tells how to answer; the misbehaving ones (an answer that never comes, a
hang-up after the request, a status line and then nothing) are raw sockets.
Timeouts are 0.3 s so every case is quick; no test asserts how long anything took.
"""

from __future__ import annotations

import hashlib
import hmac
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.conftest import ROOT, free_port
from xworkmate.delivery.channels.base import DETAIL_LIMIT, Envelope, Outcome, Result
from xworkmate.delivery.channels.webhook import WebhookChannel, sign, verify_signature

SECRET = "s3cret-for-the-receiver"
MESSAGE = 'Run «nightly» ✓\nline two "quoted"'
MESSAGE_HASH = hashlib.sha256(MESSAGE.encode("utf-8")).hexdigest()
KEY = "delivery:42:9f1c"
ENVELOPE = Envelope(
    message_id=42,
    purpose="plans.run",
    target="agent:main:main",
    body=MESSAGE,
    body_hash=MESSAGE_HASH,
    idempotency_key=KEY,
    attempt=2,
    # Microseconds on purpose: the wire holds whole milliseconds, like a JS Date.
    created_at=datetime(2026, 3, 10, 1, 0, 0, 123987, tzinfo=UTC),
)
# The documented body, byte for byte: compact, UTF-8 (not \u escapes), this key order.
EXPECTED_BODY = (
    '{"id":42,"purpose":"plans.run","sessionKey":"agent:main:main",'
    '"message":"Run «nightly» ✓\\nline two \\"quoted\\"",'
    f'"messageHash":"{MESSAGE_HASH}","idempotencyKey":"{KEY}","attempt":2,'
    '"createdAt":"2026-03-10T01:00:00.123Z"}'
).encode()

WAIT = 10  # seconds a helper thread may wait for the other side; never reached when all is well
SHORT = 0.3  # seconds: the timeout a test of the channel's timeouts waits out


# --- a well-behaved receiver -------------------------------------------------------


@dataclass
class Seen:
    path: str
    headers: dict[str, str]  # lower-cased names
    body: bytes
    client_port: int


@dataclass
class Receiver:
    url: str = ""
    status: int = 200
    answer: bytes = b"ok"
    extra_headers: dict[str, str] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    receiver: Receiver


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, so connection reuse can be seen
    server: _Server

    def do_POST(self) -> None:
        receiver = self.server.receiver
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        receiver.seen.append(
            Seen(
                path=self.path,
                headers={name.lower(): value for name, value in self.headers.items()},
                body=body,
                client_port=self.client_address[1],
            )
        )
        self.send_response(receiver.status)
        for name, value in receiver.extra_headers.items():
            self.send_header(name, value)
        if receiver.status != 204:
            self.send_header("Content-Length", str(len(receiver.answer)))
        self.end_headers()
        if receiver.status != 204:
            self.wfile.write(receiver.answer)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = _Server(("127.0.0.1", 0), _Handler)
    server.receiver = Receiver(url=f"http://127.0.0.1:{server.server_address[1]}/hooks/xworkmate")
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server.receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(WAIT)


@pytest.fixture
def make_channel() -> Iterator[Callable[..., WebhookChannel]]:
    made: list[WebhookChannel] = []

    def make(url: str, **options: object) -> WebhookChannel:
        # Generous by default: a send that should arrive must not time out on a busy
        # machine (a 0.3 s default once did, in CI). The timeout tests ask for short ones.
        options = {"connect_timeout": WAIT, "read_timeout": WAIT, **options}
        channel = WebhookChannel(name="test-hook", url=url, **options)  # type: ignore[arg-type]
        made.append(channel)
        return channel

    yield make
    for channel in made:
        channel.close()


# --- misbehaving receivers: raw sockets ----------------------------------------------


def _read_request(conn: socket.socket) -> bytes:
    """Everything of one HTTP request with a Content-Length body."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(rest) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        rest += chunk
    return head + b"\r\n\r\n" + rest


@dataclass
class RawServer:
    url: str
    request: bytes = b""
    received: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)


@pytest.fixture
def raw_server() -> Iterator[Callable[[Callable[[socket.socket, RawServer], None]], RawServer]]:
    """A one-connection server: reads the whole request, then does what the test says."""
    started: list[tuple[socket.socket, threading.Thread, RawServer]] = []

    def start(behave: Callable[[socket.socket, RawServer], None]) -> RawServer:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        state = RawServer(url=f"http://127.0.0.1:{listener.getsockname()[1]}/hook")

        def serve() -> None:
            listener.settimeout(WAIT)
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(WAIT)
                try:
                    state.request = _read_request(conn)
                    state.received.set()
                    behave(conn, state)
                except OSError:
                    pass  # the client gave up first: that is the case under test

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        started.append((listener, thread, state))
        return state

    yield start
    for listener, thread, state in started:
        state.release.set()
        thread.join(WAIT)
        listener.close()


# --- the channel -------------------------------------------------------------------------


def test_it_is_a_webhook_channel_that_relies_on_the_receiver_to_deduplicate(make_channel, receiver):
    channel = make_channel(receiver.url)
    assert (channel.name, channel.kind, channel.deduplicates) == ("test-hook", "webhook", True)
    assert SECRET not in repr(make_channel(receiver.url, secret=SECRET))


def test_it_answers_sent_on_200_and_posts_the_documented_body_and_headers(make_channel, receiver):
    channel = make_channel(receiver.url, secret=SECRET)

    assert channel.send(ENVELOPE) == Result(Outcome.SENT, "HTTP 200")

    [seen] = receiver.seen
    assert seen.path == "/hooks/xworkmate"
    assert seen.body == EXPECTED_BODY
    assert seen.headers["content-type"] == "application/json"
    assert seen.headers["idempotency-key"] == KEY
    assert seen.headers["user-agent"] == "xworkmate-delivery"
    assert seen.headers["content-length"] == str(len(EXPECTED_BODY))
    timestamp = seen.headers["x-xworkmate-timestamp"]
    assert timestamp.isdigit()
    # The documented scheme, computed here independently of the channel's code.
    mac = hmac.new(SECRET.encode(), timestamp.encode() + b"." + EXPECTED_BODY, hashlib.sha256)
    assert seen.headers["x-xworkmate-signature"] == "v1=" + mac.hexdigest()


def test_it_signs_the_exact_bytes_so_the_receiver_can_verify_them(make_channel, receiver):
    make_channel(receiver.url, secret=SECRET).send(ENVELOPE)
    [seen] = receiver.seen
    signed = {
        "timestamp": seen.headers["x-xworkmate-timestamp"],
        "signature": seen.headers["x-xworkmate-signature"],
    }

    assert verify_signature(secret=SECRET, body=seen.body, **signed) is True
    assert verify_signature(secret="not-the-secret", body=seen.body, **signed) is False
    assert verify_signature(secret=SECRET, body=seen.body.replace(b"42", b"43"), **signed) is False
    assert verify_signature(secret="", body=seen.body, **signed) is False


def test_it_sends_no_signature_without_a_secret(make_channel, receiver):
    assert make_channel(receiver.url).send(ENVELOPE).outcome is Outcome.SENT
    [seen] = receiver.seen
    assert "x-xworkmate-signature" not in seen.headers
    assert "x-xworkmate-timestamp" not in seen.headers
    assert seen.headers["idempotency-key"] == KEY


def test_it_answers_sent_on_204(make_channel, receiver):
    receiver.status = 204
    assert make_channel(receiver.url).send(ENVELOPE) == Result(Outcome.SENT, "HTTP 204")
    assert len(receiver.seen) == 1


def test_it_reuses_one_client_and_connection_for_successive_sends(make_channel, receiver):
    channel = make_channel(receiver.url, secret=SECRET)
    assert channel.send(ENVELOPE).outcome is Outcome.SENT
    assert channel.send(ENVELOPE).outcome is Outcome.SENT
    first, second = receiver.seen
    assert first.client_port == second.client_port
    # Every attempt of one message carries the same key for the receiver to de-duplicate on.
    assert first.headers["idempotency-key"] == second.headers["idempotency-key"] == KEY


def test_it_answers_failed_on_500_with_the_start_of_the_answer(make_channel, receiver):
    receiver.status = 500
    receiver.answer = b"database is down\n" + b"x" * 4000

    result = make_channel(receiver.url).send(ENVELOPE)

    assert result.outcome is Outcome.FAILED
    assert result.detail.startswith("HTTP 500: database is down\nxxx")
    assert len(result.detail) == DETAIL_LIMIT


def test_it_answers_failed_on_404_and_decodes_the_answer_with_replacement(make_channel, receiver):
    receiver.status = 404
    receiver.answer = b"no such hook \xff\xfe"
    assert make_channel(receiver.url).send(ENVELOPE) == Result(
        Outcome.FAILED, "HTTP 404: no such hook \ufffd\ufffd"
    )


def test_it_answers_failed_on_an_error_status_without_an_answer(make_channel, receiver):
    receiver.status = 503
    receiver.answer = b""
    assert make_channel(receiver.url).send(ENVELOPE) == Result(Outcome.FAILED, "HTTP 503")


def test_it_does_not_follow_a_redirect(make_channel, receiver):
    receiver.status = 307
    receiver.answer = b"moved"
    receiver.extra_headers = {"Location": receiver.url + "/elsewhere"}
    assert make_channel(receiver.url).send(ENVELOPE) == Result(Outcome.FAILED, "HTTP 307: moved")
    assert [seen.path for seen in receiver.seen] == ["/hooks/xworkmate"]


def test_it_answers_unknown_when_the_answer_comes_after_the_read_timeout(make_channel, raw_server):
    def answer_too_late(conn: socket.socket, state: RawServer) -> None:
        state.release.wait(WAIT)  # released at teardown, long after the client gave up
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")

    server = raw_server(answer_too_late)
    result = make_channel(server.url, read_timeout=SHORT).send(ENVELOPE)

    assert result.outcome is Outcome.UNKNOWN
    assert "ReadTimeout" in result.detail
    # Honest: the receiver did get the whole request.
    assert server.received.wait(WAIT)
    assert server.request.endswith(b"\r\n\r\n" + EXPECTED_BODY)


def test_it_answers_unknown_when_the_receiver_hangs_up_after_reading_the_request(
    make_channel, raw_server
):
    server = raw_server(lambda conn, state: None)  # read it all, answer nothing, close

    result = make_channel(server.url).send(ENVELOPE)

    assert result.outcome is Outcome.UNKNOWN
    assert "RemoteProtocolError" in result.detail
    assert server.received.wait(WAIT)
    assert server.request.endswith(b"\r\n\r\n" + EXPECTED_BODY)


def test_it_answers_sent_when_a_2xx_status_line_arrived_before_the_connection_broke(
    make_channel, raw_server
):
    def status_then_hang_up(conn: socket.socket, state: RawServer) -> None:
        conn.sendall(b"HTTP/1.1 202 Accepted\r\nContent-Length: 1000\r\n\r\npartial")

    server = raw_server(status_then_hang_up)
    assert make_channel(server.url).send(ENVELOPE) == Result(Outcome.SENT, "HTTP 202")


def test_it_answers_unknown_on_a_garbled_answer(make_channel, raw_server):
    server = raw_server(lambda conn, state: conn.sendall(b"SMTP ready\r\n\r\n"))
    result = make_channel(server.url).send(ENVELOPE)
    assert result.outcome is Outcome.UNKNOWN
    assert "RemoteProtocolError" in result.detail


def test_it_answers_failed_when_the_port_is_closed(make_channel):
    result = make_channel(f"http://127.0.0.1:{free_port()}/hook").send(ENVELOPE)
    assert result.outcome is Outcome.FAILED
    assert "ConnectError" in result.detail


@pytest.mark.skipif(sys.platform != "linux", reason="relies on Linux dropping SYNs to a full backlog")
def test_it_answers_failed_when_no_connection_is_made_within_the_connect_timeout(make_channel):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)  # never accepted: once the backlog is full, new SYNs are dropped
    port = listener.getsockname()[1]
    fillers = []
    try:
        for _ in range(3):
            filler = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            filler.setblocking(False)
            filler.connect_ex(("127.0.0.1", port))
            fillers.append(filler)

        result = make_channel(f"http://127.0.0.1:{port}/hook", connect_timeout=SHORT).send(
            ENVELOPE
        )

        assert result.outcome is Outcome.FAILED
        assert "ConnectTimeout" in result.detail
    finally:
        for filler in fillers:
            filler.close()
        listener.close()


def test_it_answers_failed_for_a_message_that_has_no_utf8_form(make_channel):
    broken = Envelope(**{**ENVELOPE.__dict__, "body": "half a pair \ud800"})
    result = make_channel(f"http://127.0.0.1:{free_port()}/hook").send(broken)
    assert result.outcome is Outcome.FAILED
    assert "UnicodeEncodeError" in result.detail


def test_it_answers_failed_for_an_idempotency_key_that_cannot_be_a_header(make_channel, receiver):
    for key in ("clé", "line\r\nInjected: yes"):
        result = make_channel(receiver.url).send(Envelope(**{**ENVELOPE.__dict__, "idempotency_key": key}))
        assert result.outcome is Outcome.FAILED
    assert receiver.seen == []


@pytest.mark.parametrize("url", ["ftp://example.org/hook", "/relative/hook", "http://"])
def test_it_refuses_a_url_that_is_not_http_at_construction(url):
    with pytest.raises(ValueError, match="URL"):
        WebhookChannel(name="bad", url=url)


# --- verify_signature, as a receiver uses it ------------------------------------------------

SIGNED_AT = 1773104400
BODY = b'{"id":1}'


def _signed(timestamp: int = SIGNED_AT) -> dict[str, object]:
    stamp = str(timestamp)
    return {
        "secret": SECRET,
        "timestamp": stamp,
        "body": BODY,
        "signature": sign(secret=SECRET, timestamp=stamp, body=BODY),
    }


def test_it_accepts_a_timestamp_up_to_the_tolerance_either_way():
    assert verify_signature(**_signed(), now=SIGNED_AT) is True
    assert verify_signature(**_signed(), now=SIGNED_AT + 300) is True
    assert verify_signature(**_signed(), now=SIGNED_AT - 300) is True
    assert verify_signature(**_signed(), now=SIGNED_AT + 10, tolerance=10) is True


def test_it_refuses_a_timestamp_outside_the_tolerance():
    assert verify_signature(**_signed(), now=SIGNED_AT + 301) is False  # a replay, too old
    assert verify_signature(**_signed(), now=SIGNED_AT - 301) is False  # from the future
    assert verify_signature(**_signed(), now=SIGNED_AT + 11, tolerance=10) is False


def test_it_refuses_a_signature_for_another_timestamp():
    moved = {**_signed(), "timestamp": str(SIGNED_AT + 1)}
    assert verify_signature(**moved, now=SIGNED_AT) is False


@pytest.mark.parametrize(
    ("timestamp", "signature"),
    [
        ("", None),
        ("-5", None),
        ("1773104400.5", None),
        ("١٧٧٣١٠٤٤٠٠", None),  # digits, but not ASCII ones
        ("9" * 40, None),
        (None, ""),
        (None, "v2=" + "0" * 64),
        (None, "0" * 64),
        (None, "v1=zz"),
        (None, "v1=é"),
    ],
)
def test_it_refuses_malformed_timestamps_and_signatures(timestamp, signature):
    signed = _signed()
    if timestamp is not None:
        signed["timestamp"] = timestamp
    if signature is not None:
        signed["signature"] = signature
    assert verify_signature(**signed, now=SIGNED_AT) is False


def test_it_imports_without_django():
    script = (
        "import sys\n"
        "class Blocked:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in {'django', 'rest_framework', 'celery', 'kombu'}:\n"
        "            raise ImportError(name + ' is blocked')\n"
        "sys.meta_path.insert(0, Blocked())\n"
        "import xworkmate.delivery.channels.webhook\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'django', 'celery'}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT,
        timeout=60, check=False, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_readme_shows_verify_signatures_real_signature():
    """Issue 22: where the README says the helper "does the same", it shows how to call it."""
    import inspect

    from tests.conftest import ROOT
    from xworkmate.delivery.channels.webhook import verify_signature

    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    # The annotations are strings here (postponed evaluation): shown without quotes.
    shown = f"verify_signature{inspect.signature(verify_signature)}".replace("'", "")
    assert " ".join(shown.split()) in readme.replace("`", "")


def test_concurrent_sends_each_borrow_a_client_and_keep_their_connections(make_channel, receiver):
    # A batch sends from several threads: each send borrows a client of its own (no
    # shared pool to lock), and gives it back with its connection kept alive.
    channel = make_channel(receiver.url)
    gate = threading.Barrier(4)

    def send_together() -> None:
        gate.wait(WAIT)
        channel.send(ENVELOPE)

    threads = [threading.Thread(target=send_together) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    ports = {seen.client_port for seen in receiver.seen}
    assert len(receiver.seen) == 4 and 1 <= len(ports) <= 4
    # Then, one after the other: the clients are reused, no new connection is opened.
    for _ in range(8):
        assert channel.send(ENVELOPE).outcome is Outcome.SENT
    assert {seen.client_port for seen in receiver.seen[4:]} <= ports
    assert len(channel._made) == len(ports)  # one client a connection, none per send
    channel.close()
    assert channel._made == [] and channel._idle == []
