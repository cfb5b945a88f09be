"""Beside the scripts: detect-trigger (D-B1), import-state and export-state (D-B22)."""

from __future__ import annotations

import os
import sys
from argparse import Namespace
from collections.abc import Callable

from django.utils import timezone

from longrun import selectors, services
from longrun.policies.answers import Answer
from longrun.policies.statefile import STATE_FILE_MAX_CHARS, parse_state, state_file_error

__all__ = ["HANDLERS"]


def _import_state(args: Namespace) -> Answer:
    # One character past the limit is enough to know a file is too long (D-B27).
    most = STATE_FILE_MAX_CHARS + 1
    try:
        if args.file == "-":
            text = sys.stdin.read(most)
        else:
            with open(args.file, encoding="utf-8") as file:
                text = file.read(most)
    except (OSError, ValueError) as exc:  # unreadable, not UTF-8
        raise state_file_error(str(exc)) from None
    return services.tasks_import(
        document=parse_state(text),
        replace=args.replace,
        # The path as the system gave it: bytes that are not UTF-8 come as
        # lone surrogates, which no log line or database column takes.
        source=os.fsencode(args.file).decode("utf-8", "backslashreplace"),
        by="import-state",
        now=timezone.now(),
    )


# By the operation's name in the table (longrun/skill/scripts/_operations.py).
HANDLERS: dict[str, Callable[[Namespace], Answer]] = {
    "detect-trigger": lambda args: selectors.message_mode(
        message=args.message, session_key=args.session_key or ""
    ),
    "import-state": _import_state,
    "export-state": lambda args: selectors.state_export(),
}
