"""Decide something after a COMMIT that raised, once the server answers again (D-A20).

A COMMIT can fail on the client and still have been made (the server killed
between writing it and answering). A caller that also changed something
outside the database must then look at the rows to learn which it was, on a
new connection, while the server may still be coming back. This runs that
look: in a transaction of its own, rolled back afterwards (it only reads, or
what it wrote is not wanted), retrying while the server is away, for a
bounded time. PostgreSQL only (`lock_timeout`); SQLite commits in this
process, so an error there is no commit and there is nothing to look at.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from django.db import Error, connection, transaction

logger = logging.getLogger(__name__)

_RETRY_SECONDS = 0.1


def decide_in_new_transaction(decide: Callable[[], None], *, within: float, what: str) -> bool:
    """Run `decide` once it can run to its end, on a new connection, for at most
    `within` seconds (plus one connect, bounded by connect_timeout); its row locks
    wait no longer than what is left. False when it never could: the caller falls
    back on what it does without an answer. Call it outside any atomic block.
    """
    deadline = time.monotonic() + within
    while True:
        decided = False
        try:
            connection.close()  # the one the COMMIT failed on is unusable
            with transaction.atomic():
                wait_ms = max(1, int((deadline - time.monotonic()) * 1000))
                with connection.cursor() as cursor:
                    cursor.execute("SELECT set_config('lock_timeout', %s, true)", [f"{wait_ms}ms"])
                decide()
                decided = True
                transaction.set_rollback(True)
            return True
        except Error as error:
            if decided:  # the rollback failed, after the decision: the server ends it
                return True
            logger.info("%s: %s", what, error)
            if time.monotonic() + _RETRY_SECONDS >= deadline:
                return False
            time.sleep(_RETRY_SECONDS)
