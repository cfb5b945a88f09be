"""Every decision id cited in the code has a record in docs/decisions/ (see its README).

Code, tests and the README cite decisions as ``D-A7``, ``D-B3``, ``D-C10``, ``D-K2``;
the records are the ``## D-…`` headings of ``docs/decisions/*.md``. No database, no
Django: only files are read.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DECISIONS_DIR = ROOT / "docs" / "decisions"
SOURCE_DIRS = ("xworkmate", "gateway", "artifacts", "plans", "longrun", "tests", "bench")
EXTRA_FILES = ("README.md",)
SKIPPED_DIRS = {".venv", "__pycache__"}

CITATION = re.compile(r"\bD-[ABCK]\d+\b")
RECORD_HEADING = re.compile(r"^## (D-[ABCK]\d+)\b", re.MULTILINE)


def _source_files() -> list[Path]:
    files: list[Path] = []
    for name in SOURCE_DIRS:
        base = ROOT / name
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.py")):
            if SKIPPED_DIRS.intersection(path.relative_to(ROOT).parts):
                continue
            files.append(path)
    files.extend(ROOT / name for name in EXTRA_FILES if (ROOT / name).is_file())
    return files


def _cited_ids() -> dict[str, list[str]]:
    """Each cited id with the places (``path:line``) that cite it."""
    cited: dict[str, list[str]] = defaultdict(list)
    for path in _source_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), start=1):
            for match in CITATION.finditer(line):
                cited[match.group()].append(f"{path.relative_to(ROOT)}:{number}")
    return cited


def _defined_ids() -> dict[str, list[str]]:
    """Each id defined by a ``## D-…`` heading with the records that define it."""
    defined: dict[str, list[str]] = defaultdict(list)
    for path in sorted(DECISIONS_DIR.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        for match in RECORD_HEADING.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            defined[match.group(1)].append(f"{path.relative_to(ROOT)}:{line}")
    return defined


def _sort_key(decision_id: str) -> tuple[str, int]:
    return decision_id[2], int(decision_id[3:])


def test_it_finds_the_decision_records() -> None:
    defined = _defined_ids()
    assert defined, f"no '## D-…' headings found in {DECISIONS_DIR}"
    assert (DECISIONS_DIR / "README.md").is_file()


def test_every_cited_decision_has_a_record() -> None:
    defined = _defined_ids()
    missing = {
        decision: places for decision, places in _cited_ids().items() if decision not in defined
    }
    report = "\n".join(
        f"  {decision}: cited at {', '.join(missing[decision])}"
        for decision in sorted(missing, key=_sort_key)
    )
    assert not missing, (
        "decision ids cited without a '## <id> …' record in docs/decisions/:\n" + report
    )


def test_it_defines_no_decision_twice() -> None:
    duplicates = {decision: places for decision, places in _defined_ids().items() if len(places) > 1}
    report = "\n".join(
        f"  {decision}: defined at {', '.join(duplicates[decision])}"
        for decision in sorted(duplicates, key=_sort_key)
    )
    assert not duplicates, "decision ids defined more than once:\n" + report


def test_it_numbers_records_without_gaps() -> None:
    by_prefix: dict[str, list[int]] = defaultdict(list)
    for decision in _defined_ids():
        by_prefix[decision[2]].append(int(decision[3:]))
    gaps = {
        prefix: sorted(set(range(1, max(numbers) + 1)) - set(numbers))
        for prefix, numbers in by_prefix.items()
    }
    gaps = {prefix: numbers for prefix, numbers in gaps.items() if numbers}
    assert not gaps, f"missing record numbers per prefix: {gaps}"
