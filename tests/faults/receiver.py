"""A webhook receiver in a process of its own, for the fault suite.

It answers every POST with 200 after `delay` seconds and appends one JSON line per
request to a file (the body's id, its Idempotency-Key header and the body's key),
flushed before it answers: what it wrote is what it received, whatever the test
kills meanwhile.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tests.delivery.conftest import use_channels
from tests.support.ports import free_port
from xworkmate.config import DeliveryChannel

_SERVER = r"""
import json, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

port, path, delay = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
lock = threading.Lock()
out = open(path, "a", encoding="utf-8")

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        data = json.loads(body)
        line = json.dumps({"id": data["id"], "header": self.headers.get("Idempotency-Key"),
                           "key": data["idempotencyKey"], "attempt": data["attempt"]})
        with lock:
            out.write(line + "\n")
            out.flush()
        time.sleep(delay)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"up")

    def log_message(self, *args):
        return

class Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        # A sender killed mid-request (what these tests do) breaks the pipe: not news.
        return

server = Server(("127.0.0.1", port), Handler)
server.daemon_threads = True
server.serve_forever()
"""


class Receiver:
    def __init__(self, directory: Path, *, delay: float) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/hook"
        self.log = directory / "received.jsonl"
        self.log.touch()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _SERVER, str(self.port), str(self.log), str(delay)]
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/", timeout=1).read()
                return
            except (urllib.error.URLError, OSError):
                time.sleep(0.1)
        raise RuntimeError("the receiver did not start")

    def channel_toml(self, purposes: Iterable[str], *, read_timeout: str) -> str:
        """The worker's config routing `purposes` to this receiver, as channel "hook".

        Its own TOML tables, so a test's config can put it after any section.
        """
        routes = "".join(f'"{purpose}" = "hook"\n' for purpose in purposes)
        return (
            f"[delivery.routes]\n{routes}\n"
            f'[[delivery.channels]]\nname = "hook"\nkind = "webhook"\n'
            f'url = "{self.url}"\nread_timeout = "{read_timeout}"\n'
        )

    def route_here(self, settings: Any, purposes: Iterable[str]) -> None:
        """This process routes `purposes` as the worker's config does: to this receiver.

        What the test process enqueues (or forces) must go where the worker sends.
        """
        use_channels(settings, DeliveryChannel(name="hook", kind="webhook", url=self.url),
                     routes={purpose: "hook" for purpose in purposes})

    def requests(self) -> list[dict[str, object]]:
        lines = self.log.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.endswith("}")]

    def counts(self) -> Counter[str]:
        return Counter(str(r["key"]) for r in self.requests())

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)
