"""Did a transaction commit, when its COMMIT's answer never came? (D-K42)

A COMMIT the server made can still fail on the client: the server is killed,
or the connection drops, between writing the commit and answering it. The
caller then sees the same error as for a transaction that rolled back. For
most writes that is fine (the client repeats the call and finds the rows), but
a write that also made something outside the database (session.prepare's task
scope, D-A19) must know which it was: undoing the outside part of a committed
transaction leaves a row without its directory, keeping it after a rollback
leaves a directory without its row.

PostgreSQL keeps the fate of every recent transaction id: the caller notes the
id before committing (`transaction_id`) and, when the commit fails, asks again
on a new connection (`commit_outcome`), waiting a bounded while for the server
to come back. SQLite commits in this process, so no answer can get lost there:
it has no transaction id to ask about.
"""

from __future__ import annotations

import logging
import time

from django.db import DatabaseError, connection

logger = logging.getLogger(__name__)

# How long a failed commit's caller waits, at most, for the server to say what
# became of it (plus one connect attempt, bounded by connect_timeout). A restart
# takes well under a second here (tests/faults: 0.1-0.2 s, then answers again
# within 0.1 s); a longer outage leaves the outcome unknown.
OUTCOME_WAIT_SECONDS = 5.0
_RETRY_SECONDS = 0.1


def transaction_id() -> int | None:
    """The id of the transaction in progress on PostgreSQL (one is assigned if it has
    none yet); None on a database that cannot be asked about it later."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT txid_current()")
        row = cursor.fetchone()
    return int(row[0])


def commit_outcome(txid: int, *, within: float | None = None) -> bool | None:
    """Whether transaction `txid` committed: True, False (rolled back, or lost in a
    crash before its commit was written), or None when the server did not say within
    `within` seconds (default OUTCOME_WAIT_SECONDS). Call it outside any atomic
    block: it drops the connection the failed commit left and opens a new one.
    """
    deadline = time.monotonic() + (OUTCOME_WAIT_SECONDS if within is None else within)
    while True:
        status: str | None = None
        try:
            connection.close()  # the one the commit failed on is unusable
            with connection.cursor() as cursor:
                # "in progress" while the server has not yet noticed the client is
                # gone; NULL only for an id too old to be known (never a moment old).
                cursor.execute("SELECT txid_status(%s)", [txid])
                row = cursor.fetchone()
            status = row[0] if row else None
        except DatabaseError as exc:
            logger.info("asking whether transaction %s committed: %s", txid, exc)
        if status == "committed":
            return True
        if status == "aborted":
            return False
        if time.monotonic() + _RETRY_SECONDS >= deadline:
            return None
        time.sleep(_RETRY_SECONDS)
