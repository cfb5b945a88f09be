"""`xworkmate-longrun <script> …`: longrun.cli without manage.py, for agents that shell out."""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "xworkmate.settings")
    import django

    django.setup()
    # Only now: the CLI's services need the apps loaded.
    from longrun.cli import asks_for_help, keep_stderr_for_errors, run
    from xworkmate.dbcheck import ServiceUnavailable, require_database_initialised

    if not asks_for_help(sys.argv[1:]):
        try:
            require_database_initialised()
        except ServiceUnavailable as exc:
            # The same one line as `manage.py xworkmate apikey` on a fresh data home.
            print(f"xworkmate-longrun: {exc}", file=sys.stderr)
            raise SystemExit(1) from None
    keep_stderr_for_errors()
    raise SystemExit(
        run(sys.argv[1:], prog="xworkmate-longrun", stdout=sys.stdout, stderr=sys.stderr)
    )
