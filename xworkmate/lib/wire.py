"""The old home of the request-string rules and of `with_run_identity`.

They now live in xworkmate.lib.jstext (the trim and length rules) and
xworkmate.lib.run_identity; this module keeps the old imports working until
plans and longrun import them from there (D-K18), then goes.
"""

from __future__ import annotations

from xworkmate.lib.jstext import (
    JS_WHITESPACE,
    KEY_MAX_LENGTH,
    NOT_BLANK_PATTERN,
    WHITESPACE_CLASS,
    check_max_length,
    js_trim,
)
from xworkmate.lib.run_identity import with_run_identity

__all__ = [
    "JS_WHITESPACE",
    "KEY_MAX_LENGTH",
    "NOT_BLANK_PATTERN",
    "WHITESPACE_CLASS",
    "check_max_length",
    "js_trim",
    "with_run_identity",
]
