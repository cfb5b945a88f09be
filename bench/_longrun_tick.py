"""The watchdog tick of bench/longrun.py (its part 3): seeded tables, timed ticks, query plans.

The run and its table are in bench/longrun.py, whose docstring says what is
measured and why.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import re
import statistics
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

DUE = 1_000
SIZES = (1_000, 100_000)
BATCH = 5_000


class _Rollback(Exception):
    """Raised to undo one measured tick."""


# --- 3. the watchdog tick ------------------------------------------------------------------------


def setup_django(env: dict[str, str]) -> None:
    os.environ.update(env)
    import django

    django.setup()


def _tasks(total: int, due: int, now: datetime) -> Iterator[Any]:
    """The `total` task rows: `due` of them overdue for the watchdog, the rest within window."""
    from longrun.models import LongTask
    from longrun.policies.states import ANALYZING, DONE, EXECUTING, WAITING
    from longrun.policies.timing import latest_activity, parse_next_check, progress_deadline
    from longrun.selectors import longrun_rules

    zone = longrun_rules().zone
    for i in range(total):
        if i < due:
            state = (EXECUTING, ANALYZING, WAITING)[i % 3]
            # Stale (a waiting task with a future checkpoint never is, D-B7), or,
            # waiting, past its 10-minute checkpoint.
            updated = now - timedelta(minutes=15, seconds=i % 300)
            next_check = "10m" if state == WAITING else "30m"
        else:
            state = (EXECUTING, ANALYZING, WAITING, DONE)[i % 4]
            updated = now - timedelta(seconds=i % 150)
            next_check = "30m"
        task = LongTask(
            name=f"task-{i}",
            session_label=f"chat {i}",
            origin_session_key=f"agent:main:chat-{i}",
            state=state,
            goal="整理发布说明",
            done_when="发布说明已合并",
            blocked_when="缺少权限",
            boundary="只改 docs/",
            next_check=next_check,
            note="核对变更列表",
            progress_every="3m",
            progress_every_seconds=180,
            last_progress_at=updated,
            last_progress_sent_at=updated,
            last_progress_delivery_status="sent",
            created_at=updated - timedelta(hours=1),
            updated_at=updated,
        )
        # The deadlines and clock the services derive and store (their _derive).
        task.next_check_at = parse_next_check(next_check, anchor=updated, zone=zone)
        task.progress_due_at = progress_deadline(task)
        task.last_activity_at = latest_activity(task)[1]
        yield task


def _batches(items: Iterator[Any]) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) == BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _seed(total: int, due: int, now: datetime) -> None:
    from django.db import connection, transaction

    from longrun.models import LongTask, SessionLock, Transition
    from longrun.policies.states import ACTIVE_STATES
    from xworkmate.delivery.models import Message

    with connection.cursor() as cursor:
        cursor.execute(
            f"TRUNCATE {LongTask._meta.db_table}, {Message._meta.db_table} RESTART IDENTITY CASCADE"
        )
    with transaction.atomic():
        for batch in _batches(_tasks(total, due, now)):
            tasks = LongTask.objects.bulk_create(batch)
            SessionLock.objects.bulk_create(
                SessionLock(
                    origin_session_key=t.origin_session_key, task=t, acquired_at=t.created_at
                )
                for t in tasks
                if t.state in ACTIVE_STATES
            )
            Transition.objects.bulk_create(
                Transition(task=t, at=t.created_at, by="bench", to_state=t.state, note=t.note)
                for t in tasks
            )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def _due_query_plans(now: datetime) -> str:
    """How PostgreSQL answers the watchdog's three due queries (as watchdog_run_once asks)."""
    from django.db import connection
    from django.db.models import Q

    from longrun.policies.states import ACTIVE_STATES
    from longrun.policies.timing import stale_limit
    from longrun.selectors import live_tasks, longrun_rules

    active = live_tasks().filter(state__in=ACTIVE_STATES)
    shown = []
    for deadline in (
        Q(next_check_at__lte=now),
        Q(updated_at__lte=stale_limit(now, longrun_rules().stale)),
        Q(progress_due_at__lte=now),
    ):
        sql, params = active.filter(deadline).values_list("pk", "name").query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN {sql}", params)
            lines = [str(row[0]) for row in cursor.fetchall()]
        shown.append(_scan(lines))
    return ", ".join(shown)


def _scan(plan: list[str]) -> str:
    """The index a plan reads (`name`, `name (bitmap)`), or its first scan."""
    for line in plan:
        found = re.search(r"Bitmap Index Scan on (\S+)|Index (?:Only )?Scan using (\S+)", line)
        if found:
            bitmap, index = found.groups()
            return f"{bitmap} (bitmap)" if bitmap else str(index)
    first = next((line for line in plan if "Scan" in line), plan[0])
    return re.sub(r" on \S+| +\(cost=.*", "", first.strip(" ->"))


def _tick(now: datetime) -> float:
    """One watchdog tick over the seeded tasks, rolled back: its time in ms."""
    from django.db import transaction

    from longrun.services import watchdog_run_once

    started = time.perf_counter()
    try:
        with transaction.atomic():
            answer = watchdog_run_once(now=now, by="bench")
            elapsed = time.perf_counter() - started
            body = answer.body
            if body["due_count"] != DUE or body["progress_count"] or body.get("errors"):
                raise SystemExit(
                    f"the tick found {body['due_count']} due, {body['progress_count']} progress, "
                    f"errors {body.get('errors', [])[:3]}; expected {DUE} due"
                )
            if any(payload["status"] != "queued" for payload in body["payloads"]):
                raise SystemExit("the tick did not queue every recovery message")
            raise _Rollback
    except _Rollback:
        return elapsed * 1000


def _profile(now: datetime) -> None:
    profiler = cProfile.Profile()
    profiler.runcall(_tick, now)
    print("\nwhere a 100,000-task tick spends its time (cProfile, cumulative):")
    pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(25)


def tick_rows(repeat: int, profile: bool) -> list[tuple[int, float, float, str]]:
    from longrun.policies.timing import whole_second

    rows = []
    for total in SIZES:
        now = whole_second(datetime.now().astimezone())
        _seed(total, DUE, now)
        for _ in range(2):
            _tick(now)  # warm the caches and the connection
        times = [_tick(now) for _ in range(repeat)]
        rows.append((total, statistics.median(times), max(times), _due_query_plans(now)))
        if profile and total == SIZES[-1]:
            _profile(now)
    return rows
