"""A TCP relay in front of PostgreSQL that loses a COMMIT, or the COMMIT's answer, on cue.

The moment between the server writing a commit and the client reading its
answer is too short to hit by killing the server (the fault suite met it once
in many runs). This relay makes it exact. Armed with
- `lose_answer`, it passes the next COMMIT to the server, waits for the
  server's answer (the commit is made by then) and drops both connections
  instead of passing it on;
- `lose_commit`, it drops them before the COMMIT reaches the server, which
  then rolls the transaction back;
- `late_commit`, it drops the client's end at once but passes the COMMIT on
  only `late_seconds` later: the server still holds the transaction (and its
  locks) meanwhile, as when a connection drops while the server stays up.
The client sees the same lost connection each time. `refuse` closes every new
connection at once (the server is away).

The client must talk plain text to it (sslmode=disable): the relay reads the
protocol's simple-query messages, which psycopg uses for COMMIT.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time

# The simple-query message that carries COMMIT: 'Q', its length (4 + 7), the text.
_COMMIT = b"Q\x00\x00\x00\x0bCOMMIT\x00"


class LosingProxy:
    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.armed: str | None = None  # "lose_answer", "lose_commit", "late_commit" or None
        self.late_seconds = 1.0
        self.refuse = False
        self.lost: list[str] = []  # what the relay dropped, in order
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._closed = True
        self._listener.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self.refuse:
                client.close()
                continue
            server = socket.create_connection(self.upstream, timeout=10)
            server.settimeout(None)
            pair = _Pair(self, client, server)
            threading.Thread(target=pair.to_server, daemon=True).start()
            threading.Thread(target=pair.to_client, daemon=True).start()


class _Pair:
    def __init__(self, proxy: LosingProxy, client: socket.socket, server: socket.socket) -> None:
        self.proxy = proxy
        self.client = client
        self.server = server
        self.drop_answer = False

    def _drop(self) -> None:
        for end in (self.client, self.server):
            with contextlib.suppress(OSError):  # the other side may be gone already
                end.shutdown(socket.SHUT_RDWR)
            end.close()

    def to_server(self) -> None:
        while True:
            try:
                data = self.client.recv(65536)
            except OSError:
                return
            if not data:
                self._drop()
                return
            if _COMMIT in data and self.proxy.armed is not None:
                mode, self.proxy.armed = self.proxy.armed, None
                if mode == "lose_commit":
                    self.proxy.lost.append("commit")
                    self._drop()
                    return
                self.drop_answer = True  # set before the server can answer
                if mode == "late_commit":
                    with contextlib.suppress(OSError):
                        self.client.shutdown(socket.SHUT_RDWR)
                    time.sleep(self.proxy.late_seconds)
                    self.proxy.lost.append("connection")
                    with contextlib.suppress(OSError):
                        self.server.sendall(data)
                    return
            try:
                self.server.sendall(data)
            except OSError:
                self._drop()
                return

    def to_client(self) -> None:
        while True:
            try:
                data = self.server.recv(65536)
            except OSError:
                return
            if not data or self.drop_answer:
                if self.drop_answer and data:
                    self.proxy.lost.append("answer")
                self._drop()
                return
            try:
                self.client.sendall(data)
            except OSError:
                self._drop()
                return
