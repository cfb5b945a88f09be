"""Every command block of README.md runs as written, on a fresh machine (issue 9 §9).

The test copies the working tree (what a clone would hold, plus the uncommitted
changes), gives it a fresh $HOME and no config, starts the service the way
`make run` does (`manage.py xworkmate run`; the installation step is the
shared .venv), and then runs every ```sh block of the README, in order, in one
bash session, so a block may use what an earlier one defined ($KEY, $REF).
The only change to a block is the web port: the service listens on a free
port instead of 8000.

A block followed by a ```json block must answer those JSON values; a block
followed by a ```text block must print those lines. In both, `…` inside a
string stands for any text, `{"...": "as above"}` for any object, any wire
time matches any wire time, and /home/me is the user's home directory. A block
that calls the API must document its answer.

A block that starts a long-running service (`make run`, `make test`,
gunicorn, celery) may be skipped: it is preceded by
`<!-- readme-test: skip (why) -->`. Every other block runs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, copy_checkout, free_port, http_status, stop_group

README = ROOT / "README.md"
SKIP_MARKER = re.compile(r"<!-- readme-test: skip \((?P<reason>[^)]+)\) -->\s*$")
FENCE = re.compile(r"^```(?P<lang>[a-z]*)\n(?P<body>.*?)^```\n", re.S | re.M)
LONG_RUNNING = ("make run", "make test", "gunicorn", "celery", "xworkmate serve", "scripts/faults")
WIRE_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
DOC_HOME = "/home/me"
SEPARATOR = "\x1dreadme-block"


@dataclass
class Block:
    index: int
    line: int
    body: str
    skip_reason: str | None
    answer_lang: str | None = None
    answer: str | None = None


def readme_blocks(text: str | None = None) -> list[Block]:
    """The README's ```sh blocks, each with its skip marker and documented answer."""
    text = README.read_text(encoding="utf-8") if text is None else text
    blocks: list[Block] = []
    fences = list(FENCE.finditer(text))
    for position, fence in enumerate(fences):
        if fence["lang"] != "sh":
            continue
        before = text[: fence.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = SKIP_MARKER.search(before)
        block = Block(
            index=len(blocks),
            line=text.count("\n", 0, fence.start()) + 1,
            body=fence["body"],
            skip_reason=marker["reason"] if marker else None,
        )
        if position + 1 < len(fences):
            following = fences[position + 1]
            if following["lang"] in ("json", "text") and not text[fence.end() : following.start()].strip():
                block.answer_lang, block.answer = following["lang"], following["body"]
        blocks.append(block)
    return blocks


# --- comparing documented answers with real ones ----------------------------------------


def json_values(text: str, *, apart: list[bool] | None = None) -> list[Any]:
    """The JSON values printed one after another; `apart` gets, for each value after
    the first, whether a line break separates it from the one before."""
    decoder = json.JSONDecoder()
    values, position = [], 0
    text = text.strip()
    while position < len(text):
        value, position = decoder.raw_decode(text, position)
        values.append(value)
        gap = position
        while position < len(text) and text[position].isspace():
            position += 1
        if apart is not None and position < len(text):
            apart.append("\n" in text[gap:position])
    return values


def _text_matches(documented: str, actual: str) -> bool:
    if "…" in documented:
        pattern = ".*".join(re.escape(part) for part in documented.split("…"))
        return re.fullmatch(pattern, actual, re.S) is not None
    if WIRE_TIME.match(documented) and isinstance(actual, str):
        return WIRE_TIME.match(actual) is not None
    return documented == actual


def mismatches(documented: Any, actual: Any, where: str = "$") -> list[str]:
    """Where the real answer differs from the documented one (empty when it matches)."""
    if documented == {"...": "as above"}:
        return [] if isinstance(actual, dict) else [f"{where}: expected an object, got {actual!r}"]
    if isinstance(documented, dict):
        if not isinstance(actual, dict):
            return [f"{where}: expected an object, got {actual!r}"]
        if list(documented) != list(actual):
            return [f"{where}: keys {list(documented)} documented, {list(actual)} answered"]
        return [m for key in documented for m in mismatches(documented[key], actual[key], f"{where}.{key}")]
    if isinstance(documented, list):
        if not isinstance(actual, list) or len(documented) != len(actual):
            return [f"{where}: {documented!r} documented, {actual!r} answered"]
        return [m for i, (d, a) in enumerate(zip(documented, actual, strict=True))
                for m in mismatches(d, a, f"{where}[{i}]")]
    if isinstance(documented, str) and isinstance(actual, str):
        return [] if _text_matches(documented, actual) else [f"{where}: {documented!r} documented, {actual!r} answered"]
    if documented != actual or type(documented) is not type(actual):
        return [f"{where}: {documented!r} documented, {actual!r} answered"]
    return []


def answer_mismatches(block: Block, output: str) -> list[str]:
    assert block.answer is not None
    if block.answer_lang == "json":
        apart: list[bool] = []
        documented, actual = json_values(block.answer), json_values(output, apart=apart)
        if len(documented) != len(actual):
            return [f"{len(documented)} answers documented, {len(actual)} printed: {output!r}"]
        if not all(apart):  # a reader sees `}{`: two answers run together (issue 22)
            return [f"answers printed on one line, not apart: {output!r}"]
        return [m for d, a in zip(documented, actual, strict=True) for m in mismatches(d, a)]
    expected = block.answer.strip().splitlines()
    printed = output.strip().splitlines()
    if len(expected) != len(printed) or not all(_text_matches(e, p) for e, p in zip(expected, printed, strict=True)):
        return [f"printed {printed!r}, documented {expected!r}"]
    return []


# --- a fresh machine -----------------------------------------------------------------------


def fresh_clone(target: Path) -> Path:
    """The files a clone would hold, as they are in the working tree, and the shared .venv."""
    copy_checkout(target)
    (target / ".venv").symlink_to(ROOT / ".venv")
    return target


def fresh_env(home: Path, tmp: Path) -> dict[str, str]:
    """A user's environment on a new machine: no config, no data home, no URLs."""
    dropped = ("DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE", "SECRET_KEY",
               "XDG_RUNTIME_DIR", "VIRTUAL_ENV", "PYTHONPATH")
    env = {k: v for k, v in os.environ.items() if k not in dropped and not k.startswith("XWORKMATE_")}
    return env | {"HOME": str(home), "TMPDIR": str(tmp), "LC_ALL": "C.UTF-8"}


def run_blocks(blocks: list[Block], *, clone: Path, env: dict[str, str], port: int) -> dict[int, str]:
    """Run the blocks in one bash session; answer each block's output by index."""
    script = ["set -euo pipefail"]
    for block in blocks:
        script.append(f"printf '\\n{SEPARATOR} {block.index}\\n'")
        script.append(block.body.replace("127.0.0.1:8000", f"127.0.0.1:{port}"))
    script.append(f"printf '\\n{SEPARATOR} end\\n'")
    result = subprocess.run(["bash", "-c", "\n".join(script)], cwd=clone, env=env,
                            capture_output=True, text=True, timeout=600, check=False)
    parts = result.stdout.split(f"\n{SEPARATOR} ")
    outputs = {}
    for part in parts[1:]:
        label, _, output = part.partition("\n")
        if label != "end":
            outputs[int(label)] = output
    if result.returncode != 0:
        failed = blocks[max(outputs)] if outputs else blocks[0]
        pytest.fail(
            f"README block at line {failed.line} failed (exit {result.returncode}):\n{failed.body}\n"
            f"stdout:\n{outputs.get(failed.index, '')}\nstderr:\n{result.stderr}"
        )
    return outputs


# --- the tests -------------------------------------------------------------------------------


def test_only_blocks_that_start_long_running_services_are_skipped():
    blocks = readme_blocks()
    assert len(blocks) > 10
    for block in blocks:
        if block.skip_reason is not None:
            assert any(word in block.body for word in LONG_RUNNING), (
                f"README line {block.line}: only blocks that start services may be skipped"
            )
        elif "curl " in block.body:
            assert block.answer is not None, f"README line {block.line}: document the answer"


def test_the_matcher_reads_the_documented_wildcards():
    assert mismatches({"a": "eyJ…", "t": "2026-07-01T08:00:00.000Z", "m": {"...": "as above"}},
                      {"a": "eyJ2abc", "t": "2030-01-02T03:04:05.678Z", "m": {"x": 1}}) == []
    assert mismatches({"a": 1, "b": 2}, {"b": 2, "a": 1}) != []  # the key order counts
    assert mismatches({"sha256": "1d6f…"}, {"sha256": "a441"}) != []
    assert mismatches([1, True], [1, 1]) != []
    two = Block(index=0, line=1, body="", skip_reason=None, answer_lang="json", answer='{"a": 1}\n{"a": 2}\n')
    assert answer_mismatches(two, '{"a": 1}\n{"a": 2}') == []
    assert answer_mismatches(two, '{"a": 1}{"a": 2}') == [
        "answers printed on one line, not apart: '{\"a\": 1}{\"a\": 2}'"
    ]


def _checkout_files(clone: Path) -> set[str]:
    """The checkout's files, but the data home (./var) and the caches the run writes."""
    return {
        str(path.relative_to(clone)) for path in clone.rglob("*")
        if path.is_file() and path.relative_to(clone).parts[0] not in ("var", ".venv")
        and "__pycache__" not in path.parts
    }


def test_every_readme_block_runs_as_written_on_a_fresh_machine(tmp_path):
    blocks = readme_blocks()
    clone = fresh_clone(tmp_path / "xworkmate")
    home = tmp_path / "home"
    temp = tmp_path / "tmp"
    home.mkdir()
    temp.mkdir()
    env = fresh_env(home, temp)
    port = free_port()
    log_path = tmp_path / "run.log"
    with log_path.open("wb") as log:
        service = subprocess.Popen(
            [".venv/bin/python", "manage.py", "xworkmate", "run"], cwd=clone,
            env=env | {"XWORKMATE_PORT": str(port)}, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 120
        while http_status(f"http://127.0.0.1:{port}/api/ping") != 401:
            assert service.poll() is None, log_path.read_text(errors="replace")
            assert time.monotonic() < deadline, log_path.read_text(errors="replace")
            time.sleep(0.3)
        startup = log_path.read_text(errors="replace")
        # What the README promises of the first start on a fresh machine.
        assert f"created workspace root {home}/.openclaw/workspace" in startup, startup
        assert "created API key 'local'" in startup
        before = _checkout_files(clone)
        outputs = run_blocks([b for b in blocks if b.skip_reason is None], clone=clone, env=env, port=port)
        # The examples write their files into $TMPDIR, never into the checkout (issue 22).
        assert _checkout_files(clone) - before == set()
    finally:
        stop_group(service, timeout=60)
    problems = []
    for block in blocks:
        if block.skip_reason is None and block.answer is not None:
            output = outputs[block.index].replace(str(home), DOC_HOME)
            problems += [f"README line {block.line}: {m}" for m in answer_mismatches(block, output)]
    assert problems == []
