"""`manage.py plans ...`: reconcile PLAN.md files now, or run one scheduler tick."""

from __future__ import annotations

from argparse import ArgumentParser
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from plans.scheduler import scheduler_tick
from plans.services import plans_reconcile
from xworkmate.config.kernel import SERVICE
from xworkmate.dbcheck import ServiceUnavailable, require_database_initialised


class Command(BaseCommand):
    help = "plans: reconcile PLAN.md files with their recorded revisions, or run one tick"

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True, parser_class=ArgumentParser)
        sub.add_parser(
            "reconcile",
            help="record PLAN.md files changed on disk as revisions awaiting confirmation; "
            "exit 1 when a file does not verify",
        )
        tick = sub.add_parser(
            "tick", help="start the runs of the jobs that are due now (as beat does)"
        )
        tick.add_argument(
            "--now",
            metavar="ISO_TIME",
            help="tick as if it were this moment (e.g. 2026-12-03T09:00:00+08:00), to exercise "
            "timeouts, schedule errors and catch-up; only with service.debug = true",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            require_database_initialised()
        except ServiceUnavailable as exc:
            raise CommandError(str(exc)) from exc
        if options["action"] == "tick":
            tick = scheduler_tick(now=_tick_time(options.get("now")))
            self.stdout.write(
                f"started {tick.started} run(s), recorded {tick.missed} missed fire time(s), "
                f"skipped {tick.skipped} fire time(s) of jobs still running (D-C20), "
                f"cleared {tick.cleared} stuck marker(s), "
                f"counted {tick.schedule_errors} schedule error(s), "
                f"ended {tick.timed_out} timed-out run(s), "
                f"expired {tick.expired} revision(s) awaiting confirmation (D-C25)"
            )
            return
        report = plans_reconcile(now=timezone.now())
        for archive_id in report.revised:
            self.stdout.write(f"{archive_id}: new revision awaiting confirmation")
        for archive_id, problem in report.problems.items():
            self.stdout.write(f"{archive_id}: not applied: {problem}")
        self.stdout.write(f"checked {report.checked} PLAN.md file(s)")
        if report.problems:
            raise CommandError(f"{len(report.problems)} PLAN.md file(s) do not verify")


def _tick_time(given: str | None) -> datetime:
    """Now, or the moment `--now` names: a time control for operators and tests only.

    A tick at another moment records runs, missed rows and skips for that moment,
    so it is refused unless the deployment says it is not production
    (`service.debug`) or the test settings allow it.
    """
    if given is None:
        return timezone.now()
    allowed = SERVICE.of(settings.XWORKMATE).debug or getattr(settings, "PLANS_TIME_CONTROL", False)
    if not allowed:
        raise CommandError(
            "--now: refused: moving the scheduler's clock needs service.debug = true "
            "(a test or staging deployment), never production"
        )
    try:
        moment = datetime.fromisoformat(given.strip())
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise CommandError(
            "--now: must be an ISO 8601 time with its UTC offset, like "
            f"2026-12-03T09:00:00+08:00 or 2026-12-03T01:00:00Z (got {given!r})"
        )
    return moment.astimezone(UTC)
