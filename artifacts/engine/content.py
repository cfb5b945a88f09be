"""Content types (§11), labels, and the streaming hash / inline reader of §10 step 12.

Files are read through an open descriptor in fixed-size chunks, so a large file is
never held in memory; only a file that will be inlined (size ≤ maxInlineBytes) is read
whole, because its base64 text has to be built anyway.
"""

from __future__ import annotations

import functools
import hashlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pybase64

__all__ = [
    "CHUNK_SIZE",
    "FileDigest",
    "content_type_for_path",
    "digest_fd",
    "label_for_path",
    "node_extname",
]

CHUNK_SIZE = 1024 * 1024
# Below this, a helper thread costs more than it saves (and on a busy machine, where
# no second core is free, it only adds a context switch).
_PARALLEL_THRESHOLD = 256 * 1024

_CONTENT_TYPES = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".txt": "text/plain",
    ".log": "text/plain",
    ".json": "application/json",
    ".csv": "text/csv",
    ".html": "text/html",
    ".htm": "text/html",
    ".pdf": "application/pdf",
    ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".svg": "image/svg+xml",
    ".mp4": "video/mp4",
    ".mov": "video/quicktime",
    ".webm": "video/webm",
}
_OCTET_STREAM = "application/octet-stream"


def label_for_path(relative_path: str) -> str:
    """``path.posix.basename``."""
    return relative_path.rstrip("/").rsplit("/", 1)[-1]


def node_extname(path: str) -> str:
    """Node's ``path.extname`` on the last segment: ``.bashrc`` → "", ``a.`` → "."."""
    base = label_for_path(path)
    start_dot = -1
    pre_dot_state = 0
    for index in range(len(base) - 1, -1, -1):
        if base[index] == ".":
            if start_dot == -1:
                start_dot = index
            elif pre_dot_state != 1:
                pre_dot_state = 1
        elif start_dot != -1:
            pre_dot_state = -1
    if (
        start_dot == -1
        or pre_dot_state == 0
        or (pre_dot_state == 1 and start_dot == len(base) - 1 and start_dot == 1)
    ):
        return ""
    return base[start_dot:]


def content_type_for_path(relative_path: str) -> str:
    return _CONTENT_TYPES.get(node_extname(relative_path).lower(), _OCTET_STREAM)


@dataclass(frozen=True)
class FileDigest:
    size_bytes: int
    sha256: str
    content: str | None  # standard base64 with padding, when inlined


def _hash_and_encode(data: bytearray) -> tuple[str, str]:
    """SHA-256 and base64 of ``data``; on large buffers hashing runs beside the encoder.

    ``hashlib`` releases the GIL on large buffers; the encoder (pybase64, SIMD, about
    twice as fast as ``binascii``) may not. So the hashing thread must be inside
    ``update`` before the encoder starts: the main thread waits for its signal
    (releasing the GIL), and the helper goes straight on into ``update``, which drops
    the GIL again for the main thread to encode. One long-lived helper thread serves
    every call, so the hand-over costs a context switch, not a thread start.
    """
    if len(data) < _PARALLEL_THRESHOLD:
        digest = hashlib.sha256(data).hexdigest()
        return digest, pybase64.b64encode_as_string(data)
    hasher = hashlib.sha256()
    started = threading.Event()

    def hash_all() -> None:
        started.set()
        hasher.update(data)

    done = _hash_pool().submit(hash_all)
    started.wait()
    try:
        encoded = pybase64.b64encode_as_string(data)
    finally:
        done.result()
    return hasher.hexdigest(), encoded


@functools.cache
def _hash_pool() -> ThreadPoolExecutor:
    # Created on first use, so importing the engine starts no thread.
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="artifact-hash")


def _read_all(fd: int, expected_size: int) -> bytearray:
    """Read to EOF; one allocation when the size is right, growing if the file grew."""
    buffer = bytearray(expected_size + 1)
    view = memoryview(buffer)
    filled = 0
    while True:
        if filled == len(buffer):
            buffer.extend(bytes(max(CHUNK_SIZE, len(buffer))))
            view.release()
            view = memoryview(buffer)
        count = os.readv(fd, [view[filled:]])
        if count == 0:
            break
        filled += count
    view.release()
    del buffer[filled:]
    return buffer


def _stream_sha256(fd: int) -> tuple[int, str]:
    digest = hashlib.sha256()
    buffer = bytearray(CHUNK_SIZE)
    view = memoryview(buffer)
    total = 0
    while True:
        count = os.readv(fd, [buffer])
        if count == 0:
            break
        digest.update(view[:count])
        total += count
    view.release()
    return total, digest.hexdigest()


def digest_fd(fd: int, size_hint: int, *, inline_limit: int | None) -> FileDigest:
    """Hash the file behind ``fd``; inline it when ``inline_limit`` allows.

    ``sizeBytes`` is the byte count actually read, as in the original. A file that grew
    past the limit while being read is reported as not inlined.
    """
    if inline_limit is not None and size_hint <= inline_limit:
        data = _read_all(fd, size_hint)
        if len(data) <= inline_limit:
            sha256, encoded = _hash_and_encode(data)
            return FileDigest(size_bytes=len(data), sha256=sha256, content=encoded)
        return FileDigest(
            size_bytes=len(data), sha256=hashlib.sha256(data).hexdigest(), content=None
        )
    size, sha256 = _stream_sha256(fd)
    return FileDigest(size_bytes=size, sha256=sha256, content=None)
