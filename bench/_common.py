"""Helpers the benchmark scripts share: a free local port, a fresh PostgreSQL database,
the service run as in production (a data home, a key, gunicorn), and concurrent HTTP
clients against it."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

from xworkmate.supervisor import WEB_WORKER_CLASS

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def recreate_database(url: str) -> None:
    """Drop and create the database named in `url` (through the `postgres` database)."""
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = parts._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')


# --- HTTP load against a running service (bench/gateway.py, bench/longrun.py) -------------------

# What a client process sends: (name of the call, client number, request number) ->
# (method, path, JSON body or None). A module-level function, so it can be pickled
# into the client processes.
Operation = Callable[[str, int, int], tuple[str, str, object | None]]


def request(
    port: int, token: str, method: str, path: str, body: object | None, *, timeout: float = 30
) -> tuple[int, bytes]:
    """One request on a fresh connection (as gunicorn's sync workers close them)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {"Authorization": f"Bearer {token}"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    try:
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def _client(args: tuple[Operation, int, str, str, int, float]) -> tuple[list[float], int]:
    operation, port, token, name, client, seconds = args
    latencies: list[float] = []
    errors = 0
    deadline = time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < deadline:
        method, path, body = operation(name, client, i)
        start = time.perf_counter()
        status, _ = request(port, token, method, path, body)
        latencies.append(time.perf_counter() - start)
        if status != 200:
            errors += 1
        i += 1
    return latencies, errors


def run_phase(
    pool: ProcessPoolExecutor,
    operation: Operation,
    *,
    port: int,
    token: str,
    name: str,
    clients: int,
    seconds: float,
) -> dict[str, float]:
    """`clients` processes sending `name` calls for `seconds`: requests/s, p50/p99 ms, errors."""
    started = time.perf_counter()
    jobs = [(operation, port, token, name, c, seconds) for c in range(clients)]
    results = list(pool.map(_client, jobs))
    elapsed = time.perf_counter() - started
    latencies = sorted(x for lat, _ in results for x in lat)
    return {
        "rps": len(latencies) / elapsed,
        "p50": statistics.median(latencies) * 1000,
        "p99": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
        "requests": len(latencies),
        "errors": sum(e for _, e in results),
    }


def wait_ready(
    port: int, token: str, proc: subprocess.Popen[bytes], *, timeout: float = 60
) -> None:
    """Until the server answers /api/ping (or exits, or `timeout` seconds pass)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with {proc.returncode}")
        try:
            if request(port, token, "GET", "/api/ping", None)[0] == 200:
                return
        except OSError:
            pass  # not listening yet
        time.sleep(0.2)
    raise SystemExit(f"the server did not answer /api/ping within {timeout:g} s")


# --- the service as in production (bench/gateway.py, bench/longrun.py) -------------------------


def service_home(database_url: str, prefix: str) -> dict[str, str]:
    """A fresh database and data home with one workspace root, migrated; the service's env."""
    recreate_database(database_url)
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    workspace = tmp / "ws"
    workspace.mkdir()
    config = tmp / "xworkmate.toml"
    config.write_text(
        f'[service]\nlanguage_code = "en"\n[workspace]\nroots = ["{workspace}"]\n', encoding="utf-8"
    )
    env = {
        "DJANGO_SETTINGS_MODULE": "xworkmate.settings",
        "XWORKMATE_HOME": str(tmp / "home"),
        "XWORKMATE_CONFIG": str(config),
        "DATABASE_URL": database_url,
    }
    manage(env, "migrate", "--noinput")
    return env


def api_key(env: dict[str, str], *scopes: str) -> str:
    """A new bridge key holding `scopes`; its token."""
    options = [part for scope in scopes for part in ("--scope", scope)]
    created = manage(env, "xworkmate", "apikey", "create", "--name", "bench", *options)
    return created.stdout.strip().splitlines()[-1]


@contextlib.contextmanager
def gunicorn(env: dict[str, str], token: str, workers: int) -> Iterator[int]:
    """gunicorn serving the service with `workers` sync workers, ready; its port."""
    port = free_port()
    server = subprocess.Popen(
        [
            str(Path(PYTHON).with_name("gunicorn")),
            "xworkmate.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--worker-class",
            WEB_WORKER_CLASS,
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env={**os.environ, **env},
    )
    try:
        wait_ready(port, token, server)
        yield port
    finally:
        server.terminate()
        server.wait(timeout=30)


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`manage.py ARGS` of the checkout with `env` over this process's environment."""
    return subprocess.run(
        [PYTHON, "manage.py", *args],
        cwd=ROOT,
        env={**os.environ, **env},
        check=True,
        capture_output=True,
        text=True,
    )
