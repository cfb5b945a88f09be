"""Benchmark of the plans scheduler tick: 10,000 enabled jobs of which 100 are due, next to
100 jobs of which 100 are due, on PostgreSQL.

Usage: python bench/plans.py [--repeat 15]
           [--database-url postgresql://postgres@127.0.0.1:5432/xworkmate_bench_plans]

Run by hand, never by the tests (about a minute). The database named in
--database-url is dropped and created afresh, then migrated.

For each row of the table the jobs are written straight into the tables (a
plan, its revision, entry and confirmation per job: the rows the services
would have written), with a daily cron schedule; the due ones have their next
run a minute ago, the others tomorrow. The statistics are refreshed (ANALYZE)
and then `scheduler_tick` runs --repeat times, each inside a transaction that
is rolled back afterwards, so every repetition finds the same 100 due jobs
and starts their 100 runs (run rows, outbox messages on the `record` channel,
job markers) exactly as beat's tick does. The table shows the median and the
slowest tick, and how the due query is answered (the plan PostgreSQL chose).

Target (issue 11): the 10,000-job tick at most 1.5x the 100-job tick: the tick
reads only the due rows, through the partial index on next_run_at (D-C1).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._common import recreate_database  # noqa: E402 (needs ROOT on the path)

DUE = 100
SIZES = (100, 10_000)
SCHEDULE = {"kind": "cron", "expr": "0 9 * * *", "tz": "Asia/Shanghai"}


class _Rollback(Exception):
    """Raised to undo one measured tick."""


def _setup(database_url: str, home: Path) -> None:
    workspace = home / "workspace"
    workspace.mkdir()
    config = home / "xworkmate.toml"
    config.write_text(f'[plans]\nworkspace = "{workspace}"\n', encoding="utf-8")
    os.environ.update(
        DATABASE_URL=database_url,
        XWORKMATE_CONFIG=str(config),
        XWORKMATE_HOME=str(home),
        DJANGO_SETTINGS_MODULE="xworkmate.settings",
    )
    env = {**os.environ}
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"],
        cwd=ROOT, env=env, check=True,
    )
    import django

    django.setup()


def _seed(total: int, due: int) -> None:
    """`total` jobs with their plan rows; `due` of them due a minute ago, the rest tomorrow."""
    from django.db import connection, transaction
    from django.utils import timezone

    from plans.models import Confirmation, Entry, Job, Plan, Revision, Run

    now = timezone.now()
    now_ms = int(now.timestamp() * 1000)
    with transaction.atomic():
        for model in (Run, Job, Confirmation, Entry, Revision, Plan):
            model.objects.all().delete()
        plans = Plan.objects.bulk_create(
            Plan(archive_id=f"chat-{i}", agent_id="ops", session_key=f"agent:ops:direct:chat-{i}")
            for i in range(total)
        )
        revisions = Revision.objects.bulk_create(
            Revision(plan=plan, number=1, content="-", sha256="0" * 64, source="api",
                     turn_id="turn-1")
            for plan in plans
        )
        entries = Entry.objects.bulk_create(
            Entry(task_id=uuid.uuid4(), plan=plan, task_name=f"plan {i}", state=Entry.SCHEDULED,
                  revision=revision, confirmed_revision=revision, schedule=SCHEDULE,
                  message="从路径 archives/x/PLAN.md 中读取 Task_ID: x 的详细计划并按步骤执行")
            for i, (plan, revision) in enumerate(zip(plans, revisions, strict=True))
        )
        confirmations = Confirmation.objects.bulk_create(
            Confirmation(entry=entry, revision=entry.revision, revision_sha256="0" * 64,
                         revision_turn_id="turn-1", how="api", turn_id="turn-2", message="确认",
                         revision_number=1, revision_author_known=True)
            for entry in entries
        )
        Job.objects.bulk_create(
            Job(
                job_id=str(uuid.uuid4()), entry=entry, confirmation=confirmation,
                agent_id="ops", session_key=entry.plan.session_key, name=entry.task_name,
                created_at_ms=now_ms, updated_at_ms=now_ms, schedule=SCHEDULE,
                payload={"kind": "agentTurn", "message": entry.message},
                delivery={"mode": "none", "bestEffort": True},
                next_run_at=now - timedelta(minutes=1) if i < due else now + timedelta(days=1),
            )
            for i, (entry, confirmation) in enumerate(zip(entries, confirmations, strict=True))
        )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def _due_query_plan() -> str:
    from django.db import connection
    from django.utils import timezone

    from plans.models import Job

    query = (
        Job.objects.filter(enabled=True, next_run_at__lte=timezone.now())
        .order_by("next_run_at")
        .values_list("pk", flat=True)[:200]
    )
    sql, params = query.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {sql}", params)
        lines: list[str] = [str(row[0]) for row in cursor.fetchall()]
    return next((line.strip() for line in lines if "Scan" in line), lines[0].strip())


def _measure(repeat: int) -> list[float]:
    from django.db import transaction
    from django.utils import timezone

    from plans.scheduler import scheduler_tick

    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        try:
            with transaction.atomic():
                report = scheduler_tick(now=timezone.now())
                elapsed = time.perf_counter() - started
                if report.started != DUE:
                    raise SystemExit(f"the tick started {report.started} runs, not {DUE}")
                raise _Rollback
        except _Rollback:
            times.append(elapsed * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument(
        "--database-url", default="postgresql://postgres@127.0.0.1:5432/xworkmate_bench_plans"
    )
    args = parser.parse_args()
    recreate_database(args.database_url)
    with tempfile.TemporaryDirectory(prefix="xworkmate-bench-plans-") as home:
        _setup(args.database_url, Path(home))
        rows = []
        for total in SIZES:
            _seed(total, DUE)
            _measure(2)  # warm the caches and the connection
            times = _measure(args.repeat)
            rows.append((total, statistics.median(times), max(times), _due_query_plan()))
    base = rows[0][1]
    print(f"{'jobs':>7} {'due':>5} {'median ms':>10} {'max ms':>8} {'x 100-job':>10}  due query")
    for total, median, worst, plan in rows:
        print(f"{total:>7} {DUE:>5} {median:>10.1f} {worst:>8.1f} {median / base:>10.2f}  {plan}")
    print("target: the 10,000-job tick at most 1.50x the 100-job tick")


if __name__ == "__main__":
    main()
