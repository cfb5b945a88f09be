"""The schedule engine's croner messages in the reader's language, for the admin.

The engine (plans.schedule, pure) raises croner 10's own English messages: the
API and the skill answer with them as OpenClaw's scheduler does. The admin's
schedule preview shows them translated next to the original (issue 22), so a
reader of the Chinese admin understands the refusal and can still search for
the exact text croner gives. A message no pattern here knows is shown as it is.
"""

from __future__ import annotations

import re

from django.utils.translation import get_language
from django.utils.translation import gettext as _g
from django.utils.translation import gettext_lazy as _

# croner's names of the pattern's fields.
_FIELDS = {
    "second": _("second"),
    "minute": _("minute"),
    "hour": _("hour"),
    "day": _("day of month"),
    "month": _("month"),
    "dayOfWeek": _("day of week"),
    "year": _("year"),
}

# (croner's message, its translation); the groups are put back as they were.
_PATTERNS = [
    (re.compile(r"CronPattern: Invalid value for (?P<field>\w+): (?P<value>.*)"),
     _("Invalid value for the %(field)s field: %(value)s")),
    (re.compile(r"CronPattern: (?P<field>\w+) is not a number: '(?P<value>.*)'"),
     _("The %(field)s field is not a number: '%(value)s'")),
    (re.compile(r"CronPattern: invalid configuration format \('(?P<value>.*)'\), exactly "
                r"five, six, or seven space separated parts are required\."),
     _("Invalid pattern ('%(value)s'): it needs five, six or seven parts separated by spaces.")),
    (re.compile(r"CronPattern: configuration entry (?P<field>\S+) \((?P<value>.*)\) contains "
                r"illegal characters\."),
     _("Part %(field)s of the pattern (%(value)s) contains characters it does not allow.")),
    (re.compile(r"CronPattern: configuration entry (?P<field>\w+) \((?P<value>.*)\) is empty, "
                r"check for trailing spaces\."),
     _("The %(field)s field is empty%(value)s; check for spaces at the end.")),
    (re.compile(r"CronPattern: From value is larger than to value: '(?P<value>.*)'"),
     _("The start of the range is larger than its end: '%(value)s'")),
    (re.compile(r"CronPattern: Syntax error, illegal range: '(?P<value>.*)'"),
     _("Syntax error, invalid range: '%(value)s'")),
    (re.compile(r"CronPattern: Syntax error, illegal stepping: '?(?P<value>[^']*)'?"),
     _("Syntax error, invalid step: '%(value)s'")),
]


def croner_text(message: str) -> str:
    """The message in the active language, or "" in English (croner's own words) and
    when it has no translation here."""
    if (get_language() or "en").startswith("en"):
        return ""
    for pattern, text in _PATTERNS:
        match = pattern.fullmatch(message)
        if match is None:
            continue
        values = match.groupdict()
        field = values.get("field", "")
        translated = _g(str(text)) % {
            "field": str(_FIELDS.get(field, field)),
            "value": values.get("value", ""),
        }
        return translated
    return ""
