"""One caller cannot stall the service: remembered digests, a hashing deadline, capped
ignore rules and inlined totals (issue 9 §7). Behaviour only; bench/artifacts.py times it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from artifacts.engine import content, export_artifacts, list_artifacts, read_artifact
from artifacts.engine.ignore import MAX_IGNORE_RULES, parse_rules
from tests.artifacts.engine_support import (
    ids,
    make_workspace,
    prepare,
    relative_paths,
    settings_for,
    write,
)
from xworkmate.lib.errors import InputError


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_workspace(tmp_path)


def test_a_repeat_export_uses_the_remembered_digest(workspace, monkeypatch):
    config = settings_for(workspace)
    write(prepare(config) / "big.bin", b"z" * 3_000_000)
    first = list_artifacts(ids(), config)["artifacts"][0]

    def no_reading(*args, **kwargs):
        raise AssertionError("a remembered file is not read again")

    monkeypatch.setattr(content, "_hash_until", no_reading)
    assert list_artifacts(ids(), config)["artifacts"][0] == first


def test_a_changed_file_is_hashed_again(workspace):
    config = settings_for(workspace)
    path = write(prepare(config) / "f.txt", "one")
    before = list_artifacts(ids(), config)["artifacts"][0]["sha256"]
    time.sleep(0.01)
    path.write_text("two")
    assert list_artifacts(ids(), config)["artifacts"][0]["sha256"] != before


def test_a_file_not_hashed_in_time_is_listed_without_digest_then_with_it(workspace):
    config = settings_for(workspace, hash_budget_seconds=0.0)
    write(prepare(config) / "huge.bin", b"q" * 8_000_000)
    write(prepare(config) / "small.txt", "s")
    payload = list_artifacts(ids(), config)
    huge = next(a for a in payload["artifacts"] if a["relativePath"] == "huge.bin")
    assert "sha256" not in huge and "artifactRef" not in huge and huge["sizeBytes"] == 8_000_000
    assert "huge.bin is still being hashed; sha256 and artifactRef follow" in payload["warnings"]
    with pytest.raises(InputError, match=r"^huge.bin is still being hashed; try again shortly$"):
        read_artifact(ids(artifactScope="tasks/s1/r1", relativePath="huge.bin", maxInlineBytes=0), config)
    # The background hashing finishes on its own; a later call finds the digest.
    deadline = time.monotonic() + 30
    while True:
        later = list_artifacts(ids(), config)
        huge = next(a for a in later["artifacts"] if a["relativePath"] == "huge.bin")
        if "sha256" in huge or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert len(huge["sha256"]) == 64 and huge["artifactRef"]
    assert read_artifact(ids(artifactRef=huge["artifactRef"], maxInlineBytes=0), config)["artifacts"]


def test_the_inlined_total_of_one_answer_is_capped(workspace):
    config = settings_for(workspace, max_inline_total_bytes=10)
    scope = prepare(config)
    for name in ("a.txt", "b.txt", "c.txt"):
        write(scope / name, "12345")
    payload = export_artifacts(ids(), config)
    inlined = [a["relativePath"] for a in payload["artifacts"] if "content" in a]
    assert len(inlined) == 2
    assert [w for w in payload["warnings"] if "inline total" in w] == [
        next(f"{a['relativePath']} was not inlined: the answer's inline total is spent" for a in payload["artifacts"] if "content" not in a)
    ]


def test_ignore_rules_beyond_the_cap_are_not_applied_and_said_once():
    warnings: list[str] = []
    lines = [f"dir{i}/" for i in range(MAX_IGNORE_RULES + 5000)]
    rules = parse_rules("\n".join(lines), warnings)
    assert warnings == [f"artifact-ignore.md has more than {MAX_IGNORE_RULES} rules; the rest are not applied"]
    assert rules.matches(f"dir{MAX_IGNORE_RULES - 1}/x.txt")
    assert not rules.matches(f"dir{MAX_IGNORE_RULES}/x.txt")


def test_ignore_rules_match_as_before(workspace):
    warnings: list[str] = []
    rules = parse_rules("build/\n*.tmp\n**/*.log\nexact.txt\n", warnings)
    assert warnings == []
    for path, ignored in [
        ("build", True), ("build/a/b.txt", True), ("builder/x", False),
        ("x.tmp", True), ("d/x.tmp", False), ("d/e/x.log", True), ("x.log", True),
        ("exact.txt", True), ("d/exact.txt", False), ("artifact-ignore.md", True),
    ]:
        assert rules.matches(path) is ignored, path


def test_an_export_with_many_rules_and_files_still_ignores_correctly(workspace):
    config = settings_for(workspace)
    scope = prepare(config)
    write(scope / "artifact-ignore.md", "\n".join(f"skip{i}/" for i in range(900)) + "\n*.tmp\n")
    for i in range(50):
        write(scope / f"skip{i}" / "x.txt")
        write(scope / "keep" / f"f{i}.txt")
        write(scope / f"t{i}.tmp")
    assert sorted(relative_paths(export_artifacts(ids(maxFiles=500), config))) == sorted(
        f"keep/f{i}.txt" for i in range(50)
    )
