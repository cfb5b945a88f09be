"""Every contract section cited in the code has a heading in docs/contracts/ (see its README).

Code, tests, templates and the decision records cite the wire contracts by section:
``§13.2``, ``§7.9``, ``§2.4``. Which contract a bare ``§N`` means follows from where it
is written: the app a file belongs to (``gateway/``, ``artifacts/`` and the kernel
``xworkmate/`` speak the plugin contract, ``plans/`` the plans contract, ``longrun/`` the
long-run contract; ``tests/<app>/``, ``<app>/templates/admin/<app>/``, ``bench/<app>.py`` and
``docs/decisions/<app>.md`` likewise). A file outside every app speaks for the kernel.
A citation may name its contract instead (``plans-cron §8.5``, ``longrun.md §7``), and a
citation chained to the one before it (``§7.2–§7.8``, ``§8.4, §8.5``, ``§1 and §2``)
belongs to the same document. ``issue 9 §8`` cites an issue's text, not a contract, and
is left alone. Decision ids (``D-A7``) must have a record in docs/decisions/.

No database, no Django: only files are read.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONTRACTS_DIR = ROOT / "docs" / "contracts"
DECISIONS_DIR = ROOT / "docs" / "decisions"
SOURCE_DIRS = (
    "xworkmate",
    "gateway",
    "artifacts",
    "plans",
    "longrun",
    "bench",
    "scripts",
    "tests",
)
SOURCE_SUFFIXES = {".py", ".html", ".md", ".txt", ".sh", ".toml", ""}
SKIPPED_DIRS = {".venv", "__pycache__"}
# This file's own examples are not citations.
SKIPPED_FILES = {Path(__file__).resolve()}

CONTRACTS = ("gateway-artifacts", "plans-cron", "longrun")
# A path part (a directory, or a file's stem) that names an app or a contract decides
# the contract of the bare citations in that file; the first such part from the left wins.
CONTRACT_OF_PART = {
    "gateway": "gateway-artifacts",
    "artifacts": "gateway-artifacts",
    "xworkmate": "gateway-artifacts",
    "gateway-artifacts": "gateway-artifacts",
    "plans": "plans-cron",
    "plans-cron": "plans-cron",
    "longrun": "longrun",
}
# The kernel hosts the gateway's dispatch, so it maps like xworkmate/.
KERNEL_CONTRACT = "gateway-artifacts"

SECTION = re.compile(r"§(\d+(?:\.\d+)*)")
NAMED_CONTRACT = re.compile(
    r"\b(gateway-artifacts|plans-cron|longrun)(?:\.md)?(?:\s+contract(?:'s)?)?\s*$"
)
NAMED_ISSUE = re.compile(r"\bissue\s+\d+\s*$", re.IGNORECASE)
CHAINED = re.compile(r"\s*(?:[,;/&–—-]|and|or|to)\s*")
HEADING = re.compile(r"^#{1,6}\s+§(\d+(?:\.\d+)*)(?:\s+([A-Z])\.)?", re.MULTILINE)

DECISION = re.compile(r"\bD-[ABCK]\d+\b")
RECORD_HEADING = re.compile(r"^## (D-[ABCK]\d+)\b", re.MULTILINE)

ISSUE = "issue"


@dataclass(frozen=True)
class Citation:
    place: str  # path:line
    section: str  # "13.2"
    document: str  # a contract's name, or ISSUE


def contract_of_path(relative: Path) -> str:
    """The contract a bare citation in the file at `relative` (to the root) refers to."""
    parts = [*relative.parts[:-1], relative.stem]
    for part in parts:
        if part in CONTRACT_OF_PART:
            return CONTRACT_OF_PART[part]
    return KERNEL_CONTRACT


def citations_in_line(line: str, default: str, place: str) -> list[Citation]:
    """The section citations of one line, each with the document it refers to."""
    found: list[Citation] = []
    previous_end: int | None = None
    previous_document = default
    for match in SECTION.finditer(line):
        before = line[: match.start()]
        named = NAMED_CONTRACT.search(before)
        if named:
            document = named.group(1)
        elif NAMED_ISSUE.search(before):
            document = ISSUE
        elif previous_end is not None and CHAINED.fullmatch(line[previous_end : match.start()]):
            document = previous_document
        else:
            document = default
        found.append(Citation(place, match.group(1), document))
        previous_end, previous_document = match.end(), document
    return found


def _citing_files() -> list[Path]:
    files: list[Path] = []
    for name in SOURCE_DIRS:
        base = ROOT / name
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            relative = path.relative_to(ROOT)
            if SKIPPED_DIRS.intersection(relative.parts) or not path.is_file():
                continue
            if path.resolve() in SKIPPED_FILES:
                continue
            if path.suffix in SOURCE_SUFFIXES:
                files.append(path)
    files.extend(sorted(DECISIONS_DIR.glob("*.md")))
    return files


def _citations() -> list[Citation]:
    cited: list[Citation] = []
    for path in _citing_files():
        relative = path.relative_to(ROOT)
        default = contract_of_path(relative)
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), start=1):
            cited.extend(citations_in_line(line, default, f"{relative}:{number}"))
    return cited


def _headings() -> dict[str, dict[tuple[str, str], list[int]]]:
    """Per contract, each section heading (number, group letter) with its lines."""
    headings: dict[str, dict[tuple[str, str], list[int]]] = {}
    for name in CONTRACTS:
        text = (CONTRACTS_DIR / f"{name}.md").read_text(encoding="utf-8")
        found: dict[tuple[str, str], list[int]] = defaultdict(list)
        for match in HEADING.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found[(match.group(1), match.group(2) or "")].append(line)
        headings[name] = found
    return headings


def unresolved(
    citations: list[Citation], headings: dict[str, dict[tuple[str, str], list[int]]]
) -> list[Citation]:
    """The citations whose contract has no heading with their section number."""
    numbers = {name: {number for number, _ in found} for name, found in headings.items()}
    return [
        citation
        for citation in citations
        if citation.document != ISSUE and citation.section not in numbers[citation.document]
    ]


def test_it_finds_the_contracts_and_their_citations() -> None:
    assert (CONTRACTS_DIR / "README.md").is_file()
    headings = _headings()
    for name in CONTRACTS:
        assert headings[name], f"no '## §…' headings in docs/contracts/{name}.md"
    documents = {citation.document for citation in _citations()}
    assert set(CONTRACTS) <= documents, f"expected citations of every contract, got {documents}"


def test_every_cited_section_has_a_heading() -> None:
    missing = unresolved(_citations(), _headings())
    report = "\n".join(
        f"  {citation.place}: §{citation.section} not in docs/contracts/{citation.document}.md"
        for citation in missing
    )
    assert not missing, "contract sections cited without a heading:\n" + report


def test_it_numbers_each_section_once() -> None:
    duplicates = [
        f"  docs/contracts/{name}.md: §{number}{' ' + group if group else ''} at lines {lines}"
        for name, found in _headings().items()
        for (number, group), lines in found.items()
        if len(lines) > 1
    ]
    assert not duplicates, "sections headed more than once:\n" + "\n".join(duplicates)


def test_every_cited_decision_has_a_record() -> None:
    defined: set[str] = set()
    for path in DECISIONS_DIR.glob("*.md"):
        defined.update(RECORD_HEADING.findall(path.read_text(encoding="utf-8")))
    missing: list[str] = []
    for path in _citing_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), start=1):
            missing.extend(
                f"  {path.relative_to(ROOT)}:{number}: {decision}"
                for decision in DECISION.findall(line)
                if decision not in defined
            )
    assert not missing, "decision ids cited without a record:\n" + "\n".join(missing)


# --- the resolver itself -------------------------------------------------------------------


def test_the_citing_files_location_picks_the_contract() -> None:
    assert contract_of_path(Path("gateway/methods.py")) == "gateway-artifacts"
    assert contract_of_path(Path("artifacts/engine/paths.py")) == "gateway-artifacts"
    assert contract_of_path(Path("xworkmate/dispatch.py")) == "gateway-artifacts"
    assert contract_of_path(Path("plans/policies.py")) == "plans-cron"
    assert contract_of_path(Path("longrun/policies/timing.py")) == "longrun"
    assert contract_of_path(Path("tests/plans/test_scheduler.py")) == "plans-cron"
    assert contract_of_path(Path("tests/longrun/conftest.py")) == "longrun"
    assert contract_of_path(Path("longrun/templates/admin/longrun/board_style.html")) == "longrun"
    assert contract_of_path(Path("bench/plans.py")) == "plans-cron"
    assert contract_of_path(Path("docs/decisions/plans.md")) == "plans-cron"
    assert contract_of_path(Path("tests/integration/test_bridge_flow_http.py")) == KERNEL_CONTRACT


def test_a_named_contract_overrides_the_location_and_chains() -> None:
    line = "the runs (plans-cron §8.5, §8.4) as longrun.md §7.9 says, then §13.2"
    cited = citations_in_line(line, "gateway-artifacts", "x.py:1")
    assert [(c.section, c.document) for c in cited] == [
        ("8.5", "plans-cron"),
        ("8.4", "plans-cron"),
        ("7.9", "longrun"),
        ("13.2", "gateway-artifacts"),
    ]


def test_ranges_and_lists_belong_to_their_first_citation() -> None:
    cited = citations_in_line("(§7.2–§7.8) and issue 9 §7, §8 and §9", "longrun", "x.py:1")
    assert [(c.section, c.document) for c in cited] == [
        ("7.2", "longrun"),
        ("7.8", "longrun"),
        ("7", ISSUE),
        ("8", ISSUE),
        ("9", ISSUE),
    ]


def test_the_resolver_rejects_a_made_up_section() -> None:
    headings = _headings()
    made_up = citations_in_line("# see §99.99 and §13.2", "gateway-artifacts", "x.py:1")
    assert unresolved(made_up, headings) == [made_up[0]]
    # A section that exists in one contract does not resolve in another.
    assert unresolved(citations_in_line("§13.2", "longrun", "x.py:1"), headings)
    assert not unresolved(citations_in_line("§13.2", "gateway-artifacts", "x.py:1"), headings)
