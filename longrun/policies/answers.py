"""What a long-run operation answers: the original script's output and exit code (D-B18).

Every operation of the app answers an `Answer` or raises a `LongrunError`,
each carrying what the original script printed (a JSON document or a line of
text) and the exit code it ended with. The command line prints them as they
are; the API sends the body with a status derived from the code. So agents
that follow SKILL.md see the original's output whichever door they use.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = [
    "EXIT_ACTION",
    "EXIT_INVALID",
    "EXIT_LOCKED",
    "EXIT_NO_KEY",
    "EXIT_OK",
    "Answer",
    "LongrunError",
]

# The original's exit codes (D-B18).
EXIT_OK = 0  # nothing to do
EXIT_ACTION = 1  # something is due, events were produced, or the task was not found
EXIT_INVALID = 2  # an invalid state or value, or a failed start validation
EXIT_LOCKED = 3  # another task holds the session's lock
EXIT_NO_KEY = 4  # an active state without origin_session_key


@dataclass(frozen=True)
class Answer:
    """What the original printed on stdout (a JSON-able document or text) and its exit code."""

    exit_code: int
    body: Any
    # For one page of a list (D-K13): how many items it shows, and how many the whole list has.
    listed: tuple[int, int] | None = None


class LongrunError(Exception):
    """A refused operation: nothing was written.

    `body` is what the original printed on stderr (JSON or text) and
    `exit_code` its exit code; `field` and `rule` name the input at fault and
    the rule it broke, for callers that answer in their own words (the API).
    """

    def __init__(
        self, *, exit_code: int, body: dict[str, Any] | str, field: str, rule: str
    ) -> None:
        self.exit_code = exit_code
        self.body = body
        self.field = field
        self.rule = rule
        super().__init__(self.text)

    @property
    def text(self) -> str:
        if isinstance(self.body, str):
            return self.body
        return json.dumps(self.body, ensure_ascii=False, indent=2)
