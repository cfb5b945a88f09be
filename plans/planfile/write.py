"""Writing PLAN.md: atomically, inside the workspace, then read back and verified (§5.5)."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path

from .archive import is_archive_id, plan_path
from .document import ParsedEntry, validate_plan_file
from .errors import PlanFileBlocked, PlanFileError

__all__ = ["MAX_PLAN_BYTES", "read_plan_file", "write_plan_file"]

# Far above any real plan (an entry is about 1 KiB), far below what would hurt.
MAX_PLAN_BYTES = 1024 * 1024


def _check_archive_id(archive_id: str) -> None:
    if not is_archive_id(archive_id):
        raise PlanFileError(
            "archive_id: must be letters, digits, - and _ only, as a session yields "
            f"({archive_id!r})"
        )


def _plan_location(workspace: Path, archive_id: str, *, create: bool) -> Path | None:
    """archives/<id>/PLAN.md under the workspace, refusing any symlink on the way.

    A workspace is the agent's: a symlinked `archives` or archive directory would
    carry a read or a write outside it, so every directory is checked with lstat.
    A missing directory is made when writing (`create`), else the answer is None.
    """
    root = Path(workspace)
    if not root.is_dir():
        raise PlanFileError(f"workspace: {root} is not a directory")
    current = root
    for part in ("archives", archive_id):
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            if not create:
                return None
            # Another write may make it between the lstat and here: the first proposals
            # of several sessions in a fresh workspace all make `archives` at once (the
            # load bench's 16 clients did, and one was answered 500). Whoever made it,
            # it is checked like any other: a directory, not a symlink or a file.
            with contextlib.suppress(FileExistsError):
                os.mkdir(current, 0o755)
            mode = os.lstat(current).st_mode
        if not stat.S_ISDIR(mode):
            raise PlanFileError(
                f"path: {current.relative_to(root)} must be a directory inside the workspace "
                "(a symlink or file is refused)"
            )
    return root / plan_path(archive_id)


_OWN_FILE = "only a plain file of its own is read"


def read_plan_file(workspace: Path, archive_id: str) -> str | None:
    """The PLAN.md text, or None when there is none.

    Only a plain file of its own is read (D-C19). Refused: a symlink, a hard
    link (another name of the same file may lie outside the workspace, so its
    bytes would be another file's), anything but a regular file (a FIFO would
    block the reader), more than MAX_PLAN_BYTES (a sparse 40 GB file is not
    read), not UTF-8. What is checked is the opened file itself (fstat), so a
    swap between a check and the read changes nothing.
    """
    _check_archive_id(archive_id)
    path = _plan_location(workspace, archive_id, create=False)
    if path is None:
        return None
    name = plan_path(archive_id)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PlanFileError(f"path: {name} is a symlink; {_OWN_FILE}") from exc
        reason = exc.strerror or type(exc).__name__
        raise PlanFileError(f"path: {name} cannot be read ({reason})") from exc
    with os.fdopen(fd, "rb") as handle:
        status = os.fstat(handle.fileno())
        if not stat.S_ISREG(status.st_mode):
            raise PlanFileError(f"path: {name} is not a regular file; {_OWN_FILE}")
        if status.st_nlink > 1:
            raise PlanFileError(
                f"path: {name} is a hard link ({status.st_nlink} names for one file); {_OWN_FILE}"
            )
        data = handle.read(MAX_PLAN_BYTES + 1)
    if len(data) > MAX_PLAN_BYTES:
        raise PlanFileError(f"path: {name} is larger than {MAX_PLAN_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PlanFileError(f"path: {name} is not UTF-8 (R5)") from exc


def write_plan_file(workspace: Path, archive_id: str, text: str) -> list[ParsedEntry]:
    """Validate, write (temp file, fsync, rename, fsync the directory), read back, verify.

    Bad content is refused before anything is written (PlanFileError). A read-back
    that does not match what was written, or does not verify, raises
    PlanFileBlocked with the reason: the caller must not report it archived.
    """
    _check_archive_id(archive_id)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise PlanFileError("PLAN.md: must be text without lone surrogates (R5)") from exc
    if len(data) > MAX_PLAN_BYTES:
        raise PlanFileError(f"PLAN.md: must be at most {MAX_PLAN_BYTES} bytes of UTF-8")
    entries = validate_plan_file(text, archive_id=archive_id)
    if not entries:
        raise PlanFileError("PLAN.md: at least one entry is required")
    path = _plan_location(workspace, archive_id, create=True)
    if path is None:  # made when missing; keeps the type checker honest
        raise PlanFileError(f"path: {plan_path(archive_id)} could not be made")
    fd, temporary = tempfile.mkstemp(prefix=".PLAN.md.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
    try:
        read_back = read_plan_file(workspace, archive_id)
    except PlanFileError as exc:
        raise PlanFileBlocked(f"read-back failed: {exc}") from exc
    if not read_back:
        raise PlanFileBlocked("read-back failed: PLAN.md is missing or empty")
    if read_back != text:
        raise PlanFileBlocked("read-back failed: PLAN.md differs from what was written")
    # The file holds exactly the text validated above: its entries verify.
    return entries
