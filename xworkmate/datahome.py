"""The data home: one directory for the SQLite file, broker files, secrets and logs.

Generated secrets are created once and then reused, so artifact refs and
sessions survive restarts and hold across processes (D-A10). Creation uses
O_EXCL on a temp name plus an atomic link, so two processes starting at the
same moment end up reading the same secret instead of overwriting each other.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

SECRETS_DIR = "secrets"


def ensure_home(home: Path) -> None:
    """Create the data home and its fixed sub-directories."""
    for sub in ("", "logs", "static", SECRETS_DIR):
        (home / sub).mkdir(parents=True, exist_ok=True)
    os.chmod(home / SECRETS_DIR, 0o700)


def stored_secret(home: Path, name: str) -> str:
    """Return the secret ``name`` kept in the data home, creating it once if absent."""
    folder = home / SECRETS_DIR
    target = folder / name
    if target.is_file():
        return _read_secret(target)
    folder.mkdir(parents=True, exist_ok=True)
    value = secrets.token_hex(32)
    tmp = folder / f".{name}.{os.getpid()}.{secrets.token_hex(4)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, value.encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        # link() fails if another process won the race; its secret is the one
        # kept, and we read it back below instead of ours.
        with contextlib.suppress(FileExistsError):
            os.link(tmp, target)
    finally:
        tmp.unlink()
    return _read_secret(target)


def _read_secret(path: Path) -> str:
    value = path.read_text(encoding="ascii").strip()
    if not value:
        raise RuntimeError(f"{path}: stored secret is empty; delete the file to regenerate it")
    return value
