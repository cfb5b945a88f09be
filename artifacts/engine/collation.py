"""An approximation of ICU root collation, the order of JS ``String.prototype.localeCompare``.

The original sorts directory entries and tie-breaks candidates with ``localeCompare``
(§8, §10 step 11). PyICU is not a dependency, so this module builds a three-level key
(primary: base letters case-folded, punctuation and digits in CLDR root order;
secondary: accents; tertiary: lower case before upper case). It is exact for ASCII
names and for Latin letters with combining accents; other scripts sort after Latin by
code point, which is stable and deterministic though not ICU's order.
"""

from __future__ import annotations

import unicodedata

__all__ = ["collation_key"]

# CLDR root order of the ASCII characters that are not completely ignorable.
_ROOT_ORDER = "\t\n\v\f\r _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789abcdefghijklmnopqrstuvwxyz"
_PRIMARY: dict[int, str] = {}
_TERTIARY: dict[int, str] = {}
for _weight, _char in enumerate(_ROOT_ORDER, start=1):
    _PRIMARY[ord(_char)] = chr(_weight)
    _TERTIARY[ord(_char)] = "\x01"
    if _char.isalpha():
        _PRIMARY[ord(_char.upper())] = chr(_weight)
        _TERTIARY[ord(_char.upper())] = "\x02"
# C0 controls and DEL are completely ignorable in the root collation.
for _code in (*range(0x00, 0x09), *range(0x0E, 0x20), 0x7F):
    _PRIMARY[_code] = ""
    _TERTIARY[_code] = ""
_PRIMARY_TABLE = str.maketrans(_PRIMARY)
_TERTIARY_TABLE = str.maketrans(_TERTIARY)
_NON_ASCII_BASE = 0x100


def _non_ascii_key(text: str) -> tuple[str, str, str]:
    primary: list[str] = []
    secondary: list[str] = []
    tertiary: list[str] = []
    for char in unicodedata.normalize("NFD", text):
        code = ord(char)
        if code < 0x80:
            weight = char.translate(_PRIMARY_TABLE)
            if weight:
                primary.append(weight)
                secondary.append("\x01")
                tertiary.append(char.translate(_TERTIARY_TABLE))
        elif unicodedata.combining(char):
            # A combining accent has no primary weight; it only counts at level two.
            secondary.append(chr(0x10 + code % 0xFFFF))
        else:
            lower = char.lower()
            base = ord(lower[0]) if lower else code
            primary.append(chr(min(_NON_ASCII_BASE + base, 0xD7FF)))
            secondary.append("\x01")
            tertiary.append("\x01" if lower == char else "\x02")
    return "".join(primary), "".join(secondary), "".join(tertiary)


def collation_key(text: str) -> tuple[str, str, str]:
    """A sort key whose order matches ``a.localeCompare(b)`` for the cases above."""
    if text.isascii():
        primary = text.translate(_PRIMARY_TABLE)
        return primary, "\x01" * len(primary), text.translate(_TERTIARY_TABLE)
    return _non_ascii_key(text)
