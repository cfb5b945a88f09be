"""Content types (§11), labels, and the streaming hash / inline reader of §10 step 12.

Files are read through an open descriptor in fixed-size chunks, so a large file is
never held in memory; only a file that will be inlined (size ≤ maxInlineBytes) is read
whole, because its base64 text has to be built anyway.

Digests are remembered per process by the file's identity and version (device,
inode, size, mtime and ctime, which the kernel sets on every change), so a repeat
export costs a ``stat`` per file. A request may spend only so long hashing (its
deadline): a file that is not finished by then goes on being hashed in the
background, and the request answers without its digest; a later request finds it
remembered.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
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

logger = logging.getLogger(__name__)

CHUNK_SIZE = 1024 * 1024
# Digests remembered per process; an entry is a few dozen bytes.
_CACHE_ENTRIES = 16384
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


_FileKey = tuple[int, int, int, int, int]


def _file_key(info: os.stat_result) -> _FileKey:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


class _DigestCache:
    """Digests by file version, and the hashing still running in the background."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._digests: OrderedDict[_FileKey, str] = OrderedDict()
        self._running: dict[_FileKey, Future[str | None]] = {}

    def get(self, key: _FileKey) -> str | None:
        with self._lock:
            digest = self._digests.get(key)
            if digest is not None:
                self._digests.move_to_end(key)
            return digest

    def put(self, key: _FileKey, digest: str) -> None:
        with self._lock:
            self._digests[key] = digest
            self._digests.move_to_end(key)
            while len(self._digests) > _CACHE_ENTRIES:
                self._digests.popitem(last=False)

    def running(self, key: _FileKey) -> Future[str | None] | None:
        with self._lock:
            return self._running.get(key)

    def start(self, key: _FileKey, job: Future[str | None]) -> None:
        with self._lock:
            self._running[key] = job

    def finished(self, key: _FileKey) -> None:
        with self._lock:
            self._running.pop(key, None)


_CACHE = _DigestCache()


@functools.cache
def _background_pool() -> ThreadPoolExecutor:
    # One thread: background hashing must not take the CPU from the requests.
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="artifact-hash-bg")


def _finish_in_background(fd: int, hasher: hashlib._Hash, key: _FileKey) -> str | None:
    """Hash the rest of the file behind ``fd`` (which this job closes) and remember it."""
    try:
        if _hash_until(fd, hasher, deadline=None) is None or _file_key(os.fstat(fd)) != key:
            return None  # changed while hashed: that version is never remembered
        digest = hasher.hexdigest()
        _CACHE.put(key, digest)
        return digest
    except OSError as exc:
        logger.warning("background hashing of a file failed: %s", exc)
        return None
    finally:
        os.close(fd)
        _CACHE.finished(key)


def _hash_until(fd: int, hasher: hashlib._Hash, *, deadline: float | None) -> int | None:
    """Feed the rest of ``fd`` to ``hasher``: the bytes read, or None when ``deadline``
    came first."""
    buffer = bytearray(CHUNK_SIZE)
    view = memoryview(buffer)
    total = 0
    try:
        while True:
            count = os.readv(fd, [buffer])
            if count == 0:
                return total
            hasher.update(view[:count])
            total += count
            if deadline is not None and time.monotonic() >= deadline:
                return None
    finally:
        view.release()


def _known_or_hashed(fd: int, deadline: float | None) -> tuple[int, str] | None:
    """The file's size and digest: remembered, hashed now, or None when the deadline
    came first."""
    info = os.fstat(fd)
    key = _file_key(info)
    digest = _CACHE.get(key)
    if digest is None:
        job = _CACHE.running(key)
        if job is not None:  # another request started it: wait for it, within our time
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                digest = job.result(timeout=remaining)
            except FutureTimeout:
                return None
    if digest is not None:
        return info.st_size, digest
    hasher = hashlib.sha256()
    size = _hash_until(fd, hasher, deadline=deadline)
    if size is not None:
        digest = hasher.hexdigest()
        # A file that changed while it was hashed is answered as read, never remembered.
        if _file_key(os.fstat(fd)) == key:
            _CACHE.put(key, digest)
        return size, digest
    # Out of time: the rest is hashed in the background on a descriptor of its own.
    background_fd = os.dup(fd)
    _CACHE.start(key, _background_pool().submit(_finish_in_background, background_fd, hasher, key))
    return None


def digest_fd(
    fd: int, size_hint: int, *, inline_limit: int | None, deadline: float | None = None
) -> FileDigest | None:
    """Hash the file behind ``fd``; inline it when ``inline_limit`` allows.

    ``sizeBytes`` is the byte count actually read, as in the original. A file that grew
    past the limit while being read is reported as not inlined. Without inlining, a
    remembered digest is used, and None means ``deadline`` (time.monotonic) came
    before the digest did: the hashing goes on in the background.
    """
    if inline_limit is not None and size_hint <= inline_limit:
        data = _read_all(fd, size_hint)
        if len(data) <= inline_limit:
            sha256, encoded = _hash_and_encode(data)
            return FileDigest(size_bytes=len(data), sha256=sha256, content=encoded)
        return FileDigest(
            size_bytes=len(data), sha256=hashlib.sha256(data).hexdigest(), content=None
        )
    known = _known_or_hashed(fd, deadline)
    if known is None:
        return None
    return FileDigest(size_bytes=known[0], sha256=known[1], content=None)
