"""Work started in several threads at once, for the races the PostgreSQL tests provoke."""

from __future__ import annotations

import threading
from collections.abc import Callable

from django.db import connection


def in_threads(work: Callable[[int], None], count: int) -> None:
    """Run work(0..count-1) at once, each thread on its own connection; re-raise a failure.

    The barrier lines the threads up so their transactions overlap; each closes its
    connection, or the test database could not be dropped at the end.
    """
    barrier = threading.Barrier(count)
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            barrier.wait(timeout=30)
            work(index)
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    if errors:
        raise errors[0]
