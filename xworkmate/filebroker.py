"""The embedded default's broker: kombu's file transport, each message whole or not at all (D-K20).

kombu's `filesystem` transport writes a message by creating its file under
the name consumers look for and then writing the body into it. A worker that
lists the folder in between moves the empty (or half-written) file away,
reads it and dies on `JSONDecodeError` (celery/kombu#1551): the embedded
service lost its worker within minutes under load. The lock the writer takes
does not help, since the reader never asks for it.

This transport writes the body under a name no consumer matches (a leading
dot: kombu takes the part after the first dot as `<queue>.msg`), flushes it
to disk and renames it into place. A rename within a folder is atomic, so a
consumer sees either no file or the whole message. A consumer takes a
message by renaming it into the broker's own `processed` folder, never by
kombu's move to the system temp folder, which across filesystems is a copy
two consumers can interleave. A message's name starts with a nanosecond stamp
where kombu's has a millisecond, so that messages are taken in the order they
were published even within one millisecond. Everything else is kombu's.
`use_whole_file_messages()` makes the `filesystem://` scheme mean this
transport in the process that calls it (settings.py does, so the web workers
that publish, the workers and beat all use it).
"""

from __future__ import annotations

import contextlib
import os
import uuid
from time import monotonic_ns
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import TRANSPORT_ALIASES, filesystem
from kombu.transport.virtual import Empty
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

TRANSPORT = "xworkmate.filebroker:Transport"


class Channel(filesystem.Channel):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # _get renames taken messages into it; settings.py creates it, a bare
        # Connection (a script, a test) may not have.
        os.makedirs(self.processed_folder, exist_ok=True)

    # kombu's file Channel already names the parameter `payload` where its base
    # says `message`; this keeps kombu's file signature.
    def _put(self, queue: str, payload: dict[str, Any], **kwargs: Any) -> None:  # type: ignore[override]
        """Put `payload` onto `queue`: written aside, then renamed into the queue."""
        # kombu's name (`<stamp>_<uuid>.<queue>.msg`, which _get matches), with a finer
        # stamp: consumers take messages in the order of their names, and kombu's stamp,
        # the monotonic millisecond, left two messages of one millisecond to their random
        # uuids, so a message published right after another could be taken before it.
        # The system-wide monotonic clock in nanoseconds, zero-padded so that names sort
        # as the numbers do (D-K20).
        name = f"{monotonic_ns():020d}_{uuid.uuid4()}.{queue}.msg"
        folder = self.data_folder_out
        final = os.path.join(folder, name)
        partial = os.path.join(folder, f".partial-{uuid.uuid4()}")
        try:
            with open(partial, "wb", buffering=0) as handle:
                handle.write(str_to_bytes(dumps(payload)))
                os.fsync(handle.fileno())
            os.replace(partial, final)
        except OSError as exc:
            with contextlib.suppress(OSError):  # never created, or already gone
                os.unlink(partial)
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc

    def _get(self, queue: str, timeout: float | None = None) -> Any:
        """Take the oldest message of `queue`: renamed into the processed folder, read, removed.

        kombu moves the file to the system's temp folder unless it keeps
        processed messages; on another filesystem (a tmpfs /tmp) that move is a
        copy and an unlink, so two consumers could both copy one message and one
        read the file while the other rewrites it. A rename within the broker's
        own folder is atomic: of two consumers one gets the file and the other
        an error, and skips it.
        """
        wanted = f"{queue}.msg"
        folder = self.data_folder_in
        for name in sorted(os.listdir(folder)):
            # only a whole message of this queue (`<stamp>_<uuid>.<queue>.msg`)
            if name.partition(".")[2] != wanted:
                continue
            taken = os.path.join(self.processed_folder, name)
            try:
                os.rename(os.path.join(folder, name), taken)
            except OSError:  # another consumer took it first
                continue
            try:
                with open(taken, "rb") as handle:
                    payload = handle.read()
                if not self.store_processed:
                    os.remove(taken)
            except OSError as exc:
                raise ChannelError(f"Cannot read file {taken!r} from queue.") from exc
            return loads(bytes_to_str(payload))
        raise Empty()


class Transport(filesystem.Transport):
    Channel = Channel

    # kombu's stubs give its two base classes different signatures; this is the
    # virtual transport's, which this one is.
    def drain_events(  # type: ignore[override]
        self, connection: Any, timeout: float | None = None
    ) -> None:
        """Wait for a message, but never longer than one poll while a consumer's
        prefetch is full (D-K39).

        Celery's worker runs this transport in its blocking loop, which asks for
        messages with a 2 s timeout and performs the acknowledgements of finished
        `acks_late` tasks only between two such calls. While the worker holds its
        prefetch, kombu's loop here could only poll and sleep until that timeout:
        the finished tasks stayed unacknowledged and the worker took its next
        tasks up to 2 s late, about one a second whatever the load. Returning
        after one poll lets the loop acknowledge them and take the next at once.
        """
        poll = self.polling_interval
        held = any(c._consumers and not c.qos.can_consume() for c in self.channels or ())
        if held and poll and (timeout is None or timeout > poll):
            timeout = poll
        super().drain_events(connection, timeout=timeout)


def use_whole_file_messages() -> None:
    """Make `filesystem://` mean this transport in this process."""
    TRANSPORT_ALIASES["filesystem"] = TRANSPORT
