"""`xworkmate`: the installed command (issue 20).

    xworkmate run      the embedded default on one machine (SQLite, file broker):
                       migrate, bootstrap, then web + worker + beat
    xworkmate serve    the production profile: gunicorn, Celery workers and one beat
                       on DATABASE_URL and CELERY_BROKER_URL (`--only web|worker|beat`
                       for an init system that supervises each, as deploy/ does)
    xworkmate manage   any manage.py command: migrate, createsuperuser,
                       xworkmate apikey ..., plans ..., longrun ...
    xworkmate --version

A checkout's manage.py is the same entry point (`manage`), so both report a broken
configuration alike: one line per problem and exit code 2, before anything starts.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from xworkmate import __version__

USAGE = """\
usage: xworkmate {run,serve,manage} ... | xworkmate --version

  run      the embedded default on this machine (SQLite, file broker):
           migrate, bootstrap, then web + worker + beat
  serve    the production profile: gunicorn, Celery workers and one beat
           on DATABASE_URL and CELERY_BROKER_URL
  manage   any manage.py command (migrate, createsuperuser, xworkmate apikey ...,
           plans ..., longrun ...)

`xworkmate run --help` and `xworkmate serve --help` list their options.
"""


def manage(argv: Sequence[str]) -> None:
    """Django's command line on the service's settings, as manage.py runs it."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "xworkmate.settings")
    from django.core.management import execute_from_command_line

    from xworkmate.config import ConfigError

    try:
        execute_from_command_line(list(argv))
    except ConfigError as exc:
        print("xworkmate: configuration error, nothing was started:", file=sys.stderr)
        for problem in exc.problems:
            print(f"  {problem}", file=sys.stderr)
        sys.exit(2)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(USAGE, end="")
        return 0 if args else 2
    action, rest = args[0], args[1:]
    if action in ("--version", "version"):
        print(f"xworkmate {__version__}")
        return 0
    if action in ("run", "serve"):
        # An empty program name: Django prefixes it to the command's name, and argparse
        # strips the space left over, so the usage reads `xworkmate serve`.
        manage(["", "xworkmate", action, *rest])
        return 0
    if action == "manage":
        manage(["xworkmate manage", *rest])
        return 0
    print(f"xworkmate: unknown command {action!r}; expected run, serve or manage "
          "(`xworkmate --help`)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
