"""The Simplified Chinese catalogue is complete and compiled."""

from __future__ import annotations

import re

from django.utils import translation

from tests.conftest import ROOT

PO = ROOT / "xworkmate" / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"


def test_every_message_has_a_translation():
    text = PO.read_text(encoding="utf-8")
    entries = text.split("\n\n")[1:]  # the first block is the header
    untranslated = [e for e in entries if e.strip().endswith('\nmsgstr ""')]
    assert "#, fuzzy" not in text
    assert untranslated == []


def test_the_compiled_catalogue_matches_the_source():
    # Each translation in the .po is what Django serves (catches a stale .mo).
    text = PO.read_text(encoding="utf-8")
    # A message with a context (msgctxt) is served by pgettext with that context.
    pairs = re.findall(r'\n(?:msgctxt "(.+)"\n)?msgid "(.+)"\nmsgstr "(.+)"', text)
    assert len(pairs) > 50
    with translation.override("zh-hans"):
        for context, source, target in pairs:
            served = translation.pgettext(context, source) if context else translation.gettext(source)
            assert served == target, (context, source)
