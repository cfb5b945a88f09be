"""A session's cap on its long tasks, on PostgreSQL: racing registrations never pass it together.

The cap (D-B26) is a count followed by an insert; two registrations that both
counted before either inserted would both see room. Here the race is forced,
not hoped for: the test holds every insert into the task table back (a table
lock in SHARE mode blocks writes, not reads or row locks) until each racer
has got as far as it can, so without a lock taken before the count every
racer would have counted the same number.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection, transaction

from longrun.models import LongTask
from longrun.policies.answers import LongrunError
from tests.conftest import configure
from tests.integration.conftest import wait_for
from tests.longrun.conftest import K, task_set

pytestmark = pytest.mark.usefixtures("real_services")

CAP = 3
RACERS = 6


def _waiting_for_a_lock() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")  # else one snapshot per transaction
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
        )
        row = cursor.fetchone()
    return int(row[0]) if row else 0


def test_it_never_lets_racing_registrations_pass_the_session_cap_together(settings: Any) -> None:
    configure(settings, "longrun", max_live_tasks_per_session=CAP)
    task_set("first", state="blocked")
    outcomes: list[str] = []
    errors: list[BaseException] = []

    def register(index: int) -> None:
        try:
            task_set(f"racer-{index}", state="blocked")
            outcomes.append("registered")
        except LongrunError as exc:
            outcomes.append(str(exc.body["error"]) if isinstance(exc.body, dict) else exc.text)
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=register, args=(i,)) for i in range(RACERS)]
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(f"LOCK TABLE {LongTask._meta.db_table} IN SHARE MODE")
        for thread in threads:
            thread.start()
        # Each racer waits: at the insert (the table lock), or before its count.
        wait_for(lambda: _waiting_for_a_lock() >= RACERS, timeout=30, what="every racer waiting")
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    assert sorted(outcomes) == ["registered"] * (CAP - 1) + ["too many live tasks"] * (
        RACERS - CAP + 1
    )
    assert LongTask.objects.filter(origin_session_key=K).count() == CAP
