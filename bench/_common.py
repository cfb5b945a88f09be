"""Helpers the benchmark scripts share: a free local port, a fresh PostgreSQL database."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit


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
