"""`manage.py longrun <script> …`: the original skill's scripts (D-B18), see longrun.cli."""

from __future__ import annotations

from argparse import REMAINDER
from typing import Any, TextIO, cast

from django.core.management.base import BaseCommand, CommandError, CommandParser

from longrun.cli import asks_for_help, keep_stderr_for_errors, run
from xworkmate.dbcheck import ServiceUnavailable, require_database_initialised


class Command(BaseCommand):
    help = (
        "long-run mode: the original skill's scripts (task_state, validate_task_start, "
        "work_cycle_tick, watchdog, …) with their flags, output and exit codes; plus "
        "detect-trigger, import-state and export-state. `longrun --help` lists them."
    )
    # Agents call this after every step: its output must be the script's alone,
    # and start-up checks belong to `make run`.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "script", nargs=REMAINDER, help="a script's name, then its own arguments"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        # Errors are JSON for programs to read: never coloured, never mixed with INFO logs.
        self.stderr.style_func = None
        if not asks_for_help(options["script"]):
            try:
                require_database_initialised()
            except ServiceUnavailable as exc:
                raise CommandError(str(exc)) from exc
        keep_stderr_for_errors()
        code = run(
            options["script"],
            prog="manage.py longrun",
            # Django's wrappers write like the text files they wrap.
            stdout=cast(TextIO, self.stdout),
            stderr=cast(TextIO, self.stderr),
        )
        if code:
            raise SystemExit(code)
