"""`manage.py plans ...`: reconcile PLAN.md files now, or run one scheduler tick."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from plans.scheduler import scheduler_tick
from plans.services import plans_reconcile
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
        sub.add_parser("tick", help="start the runs of the jobs that are due now (as beat does)")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            require_database_initialised()
        except ServiceUnavailable as exc:
            raise CommandError(str(exc)) from exc
        if options["action"] == "tick":
            tick = scheduler_tick(now=timezone.now())
            self.stdout.write(
                f"started {tick.started} run(s), recorded {tick.missed} missed fire time(s), "
                f"skipped {tick.skipped} fire time(s) of jobs still running (D-C20), "
                f"cleared {tick.cleared} stuck marker(s)"
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
