#!/usr/bin/env python
"""Django's command-line utility for xworkmate."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "xworkmate.settings")
    from django.core.management import execute_from_command_line

    from xworkmate.config import ConfigError

    try:
        execute_from_command_line(sys.argv)
    except ConfigError as exc:
        # A broken config stops every command before anything starts.
        print("xworkmate: configuration error, nothing was started:", file=sys.stderr)
        for problem in exc.problems:
            print(f"  {problem}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
