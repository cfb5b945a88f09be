"""Typed errors of the artifact engine (D-A5) and Node-compatible fs error text.

The gateway answers every failure with ``{code, message}``. The code comes from the
exception type, never from a substring test on the message (D-A5); the message is the
contract's text verbatim (§17), so the bridge keeps matching on it unchanged.
"""

from __future__ import annotations

import errno
import os

# The service's generic refusal (xworkmate.lib.errors): every door answers it.
from xworkmate.lib.errors import InputError

__all__ = ["ArtifactMissingError", "WorkspaceUnavailableError", "node_fs_error_message"]


class ArtifactMissingError(InputError):
    """A path that does not exist (D-A13).

    The wire code stays ``INVALID_REQUEST`` as in the original; the subclass only lets a
    download view answer 404 without parsing the ``ENOENT`` text.
    """


class WorkspaceUnavailableError(InputError):
    """The workspace is not a usable directory (gone, or replaced by a file).

    ``tasks.get`` still answers a recorded status then, with a warning, instead of
    failing the whole lookup over the manifest it cannot build.
    """


# libuv's descriptions for the errno names Node prints; anything else falls back to
# the C library text in lower case, which is what libuv does too.
_UV_DESCRIPTIONS: dict[int, str] = {
    errno.ENOENT: "no such file or directory",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ENOTDIR: "not a directory",
    errno.EISDIR: "illegal operation on a directory",
    errno.EEXIST: "file already exists",
    errno.ELOOP: "too many symbolic links encountered",
    errno.ENAMETOOLONG: "name too long",
    errno.EMFILE: "too many open files",
    errno.ENFILE: "file table overflow",
    errno.ENOSPC: "no space left on device",
    errno.EROFS: "read-only file system",
    errno.EIO: "i/o error",
    errno.EBUSY: "resource busy or locked",
    errno.EINVAL: "invalid argument",
    errno.EFBIG: "file too large",
    errno.EILSEQ: "illegal byte sequence",
    errno.EXDEV: "cross-device link not permitted",
}


def node_fs_error_message(exc: OSError, syscall: str, path: str) -> str:
    """Format ``exc`` the way Node's fs errors read: ``ENOENT: no such file …, realpath '<p>'``."""
    number = exc.errno if exc.errno is not None else errno.EIO
    name = errno.errorcode.get(number, "EIO")
    description = _UV_DESCRIPTIONS.get(number) or os.strerror(number).lower()
    return f"{name}: {description}, {syscall} '{path}'"
