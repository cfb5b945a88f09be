"""`xworkmate-longrun <script> …`: longrun.cli without manage.py, for agents that shell out."""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "xworkmate.settings")
    import django

    django.setup()
    # Only now: the CLI's services need the apps loaded.
    from longrun.cli import keep_stderr_for_errors, run

    keep_stderr_for_errors()
    raise SystemExit(
        run(sys.argv[1:], prog="xworkmate-longrun", stdout=sys.stdout, stderr=sys.stderr)
    )
