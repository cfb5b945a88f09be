"""PLAN.md: template, parse/render round trips, rules, archive names, verified writes.

Case numbers are those of the plans contract's §11 (groups B and F).
"""

from __future__ import annotations

import dataclasses
import os
import re
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plans.planfile import (
    Entry,
    PlanFileBlocked,
    PlanFileError,
    append_entry,
    archive_id_from_session,
    archive_timestamp,
    is_archive_timestamp,
    new_entry,
    parse_plan_file,
    plan_path_problem,
    read_plan_file,
    render_entry,
    replace_entry,
    validate_plan_file,
    write_plan_file,
)

ARCHIVE = "53615cc3-f321-42eb-8eda-1f1e5c301826"
TASK = "7f3c9a2e-1b4d-4c8e-9f10-2a3b4c5d6e7f"
EXPECTED_34 = """### [Task_ID: 7f3c9a2e-1b4d-4c8e-9f10-2a3b4c5d6e7f] 每日库存巡检日报

- **Role_Context**: 财务分析师 (Aligned with `SOUL.md` & `IDENTITY.md`)
- **Archive_Path**: archives/53615cc3-f321-42eb-8eda-1f1e5c301826/PLAN.md
- **Status**: Active

#### ORA Detail

- **Objective**: 减少缺货风险
- **Result**: 每日 09:00 前生成 report.md
- **Action_Steps**:
  1. **[读取本文件指令]**：从路径 `archives/53615cc3-f321-42eb-8eda-1f1e5c301826/PLAN.md` 中读取 `Task_ID: 7f3c9a2e-1b4d-4c8e-9f10-2a3b4c5d6e7f` 的详细计划并按步骤执行。
  2. **[上下文校验]**：确认当前上下文已对齐 `SOUL.md` 与 `IDENTITY.md`。
  3. **[执行动作]**：根据读取到的详细步骤执行业务逻辑。
  4. **[归档校验]**：验证输出物已存入 `archives/53615cc3-f321-42eb-8eda-1f1e5c301826/{TIMESTAMP}/` 目录。
"""


def _entry(name="每日库存巡检日报", task_id=TASK, **changes) -> Entry:
    entry = new_entry(
        archive_id=ARCHIVE, task_name=name, persona="财务分析师",
        objective="减少缺货风险", result="每日 09:00 前生成 report.md", task_id=task_id,
    )
    return dataclasses.replace(entry, **changes)


def test_17_the_template_renders_byte_for_byte():
    assert render_entry(_entry(), archive_id=ARCHIVE) == EXPECTED_34
    assert parse_plan_file(EXPECTED_34)[0].entry == _entry()


def test_a_new_entry_gets_a_fresh_lowercase_uuid4():
    first, second = (
        new_entry(archive_id=ARCHIVE, task_name="t", persona="p", objective="o", result="r")
        for _ in range(2)
    )
    assert first.task_id != second.task_id
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", first.task_id)


@pytest.mark.parametrize(
    ("field", "changes"),
    [
        ("Role_Context", {"role_context": None}),
        ("Archive_Path", {"archive_path": None}),
        ("Status", {"status": None}),
        ("Objective", {"objective": None}),
        ("Result", {"result": "  "}),
        ("Action_Steps", {"action_steps": None}),
    ],
)
def test_19_a_missing_field_is_named_and_nothing_is_written(tmp_path, field, changes):
    with pytest.raises(PlanFileError, match=f"missing required field\\(s\\): {field}"):
        render_entry(_entry(**changes), archive_id=ARCHIVE)
    # The same from a file: the line of the field is gone.
    label = {"Action_Steps": "- **Action_Steps**:"}.get(field, f"- **{field}**:")
    text = "\n".join(
        line for line in EXPECTED_34.split("\n")
        if not line.startswith(label) and not (field == "Action_Steps" and line.startswith("  "))
    )
    with pytest.raises(PlanFileError, match=f"missing required field\\(s\\): {field}"):
        write_plan_file(tmp_path, ARCHIVE, text)
    assert not (tmp_path / "archives").exists()


def test_19_a_missing_task_id_heading_is_named():
    text = EXPECTED_34.split("\n", 2)[2]  # the heading and the blank line after it dropped
    with pytest.raises(PlanFileError, match=r"line 1: .*missing required field\(s\): Task_ID"):
        parse_plan_file(text)


@pytest.mark.parametrize(
    "first",
    [
        f"**[读取本文件指令]**：从路径 `archives/other-archive/PLAN.md` 中读取 `Task_ID: {TASK}` 的详细计划并按步骤执行。",
        f"**[读取本文件指令]**：从路径 `archives/{ARCHIVE}/PLAN.md` 中读取 `Task_ID: 00000000-0000-4000-8000-000000000000` 的详细计划并按步骤执行。",
        "**[上下文校验]**：确认当前上下文已对齐 `SOUL.md` 与 `IDENTITY.md`。",
    ],
)
def test_20_the_first_step_must_read_this_file_for_this_task(first):
    entry = _entry()
    steps = (first, *entry.action_steps[1:])
    with pytest.raises(PlanFileError, match="first Action_Step must be the read-this-file instruction for this Task_ID"):
        render_entry(dataclasses.replace(entry, action_steps=steps), archive_id=ARCHIVE)


def test_the_rules_spelling_of_the_first_step_is_accepted_too():
    rule_form = f"[读取本文件指令]：从路径 archives/{ARCHIVE}/PLAN.md 中读取 Task_ID: {TASK} 的详细计划并按步骤执行"
    text = EXPECTED_34.replace(_entry().action_steps[0], rule_form)
    assert validate_plan_file(text, archive_id=ARCHIVE)[0].entry.action_steps[0] == rule_form


def test_the_seeds_bullet_spelling_is_read():
    text = EXPECTED_34.replace("- **", "• **")
    assert parse_plan_file(text)[0].entry == _entry()


ENTRY_B = "0b6a2f4e-8c1d-4e7f-a9b0-c1d2e3f4a5b6"
ENTRY_C = "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f"


def _two_entries() -> str:
    text = append_entry("", _entry(), archive_id=ARCHIVE)
    return append_entry(text, _entry(name="周报", task_id=ENTRY_B), archive_id=ARCHIVE)


def test_22_updating_one_entry_leaves_the_other_byte_identical():
    text = _two_entries()
    a_block = text[: text.index(f"### [Task_ID: {ENTRY_B}]")]
    b = parse_plan_file(text)[1].entry
    updated = replace_entry(text, dataclasses.replace(b, objective="按周汇总"), archive_id=ARCHIVE)
    assert updated.startswith(a_block)
    entries = [item.entry for item in parse_plan_file(updated)]
    assert [e.task_id for e in entries] == [TASK, ENTRY_B]
    assert entries[1].objective == "按周汇总" and entries[0] == _entry()
    # ... and the other way round: A changed, B's block kept to the byte.
    b_block = text[text.index(f"### [Task_ID: {ENTRY_B}]") :]
    changed_a = replace_entry(text, _entry(result="每日 08:00"), archive_id=ARCHIVE)
    assert changed_a.endswith(b_block)


def test_23_a_new_entry_is_appended_after_one_blank_line():
    text = _two_entries()
    added = append_entry(text, _entry(name="月报", task_id=ENTRY_C), archive_id=ARCHIVE)
    assert added.startswith(text.rstrip("\n") + "\n\n### [Task_ID: " + ENTRY_C)
    assert [item.entry.task_id for item in parse_plan_file(added)] == [TASK, ENTRY_B, ENTRY_C]
    with pytest.raises(PlanFileError, match="is already in this PLAN.md"):
        append_entry(added, _entry(), archive_id=ARCHIVE)


def test_a_duplicate_task_id_in_a_file_is_refused():
    with pytest.raises(PlanFileError, match="line 17: duplicate Task_ID"):
        parse_plan_file(EXPECTED_34 + "\n" + EXPECTED_34)


@pytest.mark.parametrize(
    "path",
    [
        f"archives/{ARCHIVE}/plan.md",
        f"archives/{ARCHIVE}/2026-03-10-09-00-00/PLAN.md",
        f"arch/archives/{ARCHIVE}/PLAN.md",
        f"archive/{ARCHIVE}/PLAN.md",
        "archives/other/PLAN.md",
    ],
)
def test_25_only_archives_id_plan_md_is_compliant(path):
    problem = plan_path_problem(path, ARCHIVE)
    assert problem is not None and f"must be written to archives/{ARCHIVE}/PLAN.md" in problem
    assert plan_path_problem(f"archives/{ARCHIVE}/PLAN.md", ARCHIVE) is None


@pytest.mark.parametrize("field", ["objective", "result", "task_name", "role_context"])
def test_26_a_leftover_placeholder_is_refused(field):
    with pytest.raises(PlanFileError, match="placeholder"):
        render_entry(_entry(**{field: "每日 {{O_content}}"}), archive_id=ARCHIVE)


def test_single_braces_of_the_plans_own_words_are_kept_but_template_names_are_not():
    assert "{date}" in render_entry(_entry(objective="生成 {date} 的报告"), archive_id=ARCHIVE)
    with pytest.raises(PlanFileError, match="placeholder"):
        render_entry(_entry(objective="见 archives/{ARCHIVE_ID}/"), archive_id=ARCHIVE)


def test_step_4_keeps_the_timestamp_token_or_a_concrete_bucket():
    entry = _entry()
    concrete = entry.action_steps[3].replace("{TIMESTAMP}", "2026-03-10-09-00-00")
    steps = (*entry.action_steps[:3], concrete)
    assert render_entry(dataclasses.replace(entry, action_steps=steps), archive_id=ARCHIVE)
    wrong = entry.action_steps[3].replace("{TIMESTAMP}", "2026-03-10 09:00:00")
    with pytest.raises(PlanFileError, match="step 4 must name"):
        render_entry(
            dataclasses.replace(entry, action_steps=(*entry.action_steps[:3], wrong)),
            archive_id=ARCHIVE,
        )


def test_an_unparsable_line_is_reported_with_its_number_and_the_rule():
    text = EXPECTED_34.replace("- **Status**: Active", "Status = Active")
    with pytest.raises(PlanFileError, match=r"line 5: not a field of an entry here .*\(R6\)"):
        parse_plan_file(text)
    with pytest.raises(PlanFileError, match=r"line 1: an entry heading must be"):
        parse_plan_file(EXPECTED_34.replace(TASK, "NOT-A-UUID"))


# --- hypothesis: round trips and isolation ----------------------------------------------

# One line of any script, no line breaks, no placeholder braces, not blank.
_line = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp"), blacklist_characters="{}"),
    min_size=1,
    max_size=40,
).filter(lambda s: s.strip() == s and s.strip())
_entries = st.builds(
    lambda name, persona, objective, result, extra, seed: new_entry(
        archive_id=ARCHIVE, task_name=name, persona=persona, objective=objective,
        result=result, extra_steps=tuple(extra),
        task_id=f"{seed:08x}-0000-4000-8000-000000000000",
    ),
    _line, _line, _line, _line, st.lists(_line, max_size=3), st.integers(0, 2**32 - 1),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_entries, min_size=1, max_size=4, unique_by=lambda e: e.task_id))
def test_render_parse_render_is_stable(entries):
    text = ""
    for entry in entries:
        text = append_entry(text, entry, archive_id=ARCHIVE)
    parsed = [item.entry for item in validate_plan_file(text, archive_id=ARCHIVE)]
    assert parsed == entries
    again = ""
    for entry in parsed:
        again = append_entry(again, entry, archive_id=ARCHIVE)
    assert again == text


@settings(max_examples=150, deadline=None)
@given(
    st.lists(_entries, min_size=2, max_size=4, unique_by=lambda e: e.task_id),
    st.data(),
    _line,
)
def test_editing_one_entry_leaves_every_other_byte_identical(entries, data, objective):
    text = ""
    for entry in entries:
        text = append_entry(text, entry, archive_id=ARCHIVE)
    index = data.draw(st.integers(0, len(entries) - 1))
    items = parse_plan_file(text)
    edited = replace_entry(
        text, dataclasses.replace(entries[index], objective=objective), archive_id=ARCHIVE
    )
    after = parse_plan_file(edited)
    for position, (before_item, after_item) in enumerate(zip(items, after, strict=True)):
        if position != index:
            assert edited[after_item.start : after_item.end] == text[before_item.start : before_item.end]
    assert after[index].entry.objective == objective
    assert [item.entry.task_id for item in after] == [entry.task_id for entry in entries]


# --- archive protocol (§5, group F) -------------------------------------------------------


def test_76_the_archive_id_is_the_last_segment_of_the_session():
    session = (
        "agent:f4f81622-f300-48b0-8710-92970fabf4d3:user:2a664704-5e18-11e3-a957-dcd2fc061e41"
        ":direct:53615cc3-f321-42eb-8eda-1f1e5c301826"
    )
    assert archive_id_from_session(session) == ARCHIVE


def test_77_the_status_line_is_cut_before_the_bullet():
    assert archive_id_from_session("🧵 Session: agent:a:user:u:direct:abc • updated 2m ago") == "abc"
    assert archive_id_from_session("agent:a:direct:x.y z") == "x_y_z"


@pytest.mark.parametrize("session", ["", "   ", "unknown", "Session: unknown", ":::", None])
def test_no_archive_id_is_invented(session):
    with pytest.raises(PlanFileError, match="invalid Session"):
        archive_id_from_session(session)


def test_80_the_timestamp_format():
    assert archive_timestamp(datetime(2026, 3, 25, 3, 4, 5, 678000)) == "2026-03-25-03-04-05"
    assert is_archive_timestamp("2026-03-25-03-04-05")
    for bad in ("2026-03-25 03:04:05", "2026-03-25T03:04:05", "٢٠٢٦-03-25-03-04-05"):
        assert not is_archive_timestamp(bad)


# --- writing ------------------------------------------------------------------------------


def test_a_plan_is_written_atomically_and_read_back(tmp_path):
    text = _two_entries()
    entries = write_plan_file(tmp_path, ARCHIVE, text)
    assert [item.entry.task_id for item in entries] == [TASK, ENTRY_B]
    path = tmp_path / "archives" / ARCHIVE / "PLAN.md"
    assert path.read_bytes() == text.encode("utf-8")
    assert read_plan_file(tmp_path, ARCHIVE) == text
    assert sorted(p.name for p in path.parent.iterdir()) == ["PLAN.md"]  # no temp file left


def test_bad_content_writes_nothing_and_keeps_the_old_file(tmp_path):
    write_plan_file(tmp_path, ARCHIVE, EXPECTED_34)
    with pytest.raises(PlanFileError, match="Status: must be one of Active, Cancelled"):
        write_plan_file(tmp_path, ARCHIVE, EXPECTED_34.replace("Active", "Paused"))
    assert read_plan_file(tmp_path, ARCHIVE) == EXPECTED_34


def test_a_symlinked_archive_directory_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    workspace = tmp_path / "ws"
    (workspace / "archives").mkdir(parents=True)
    os.symlink(outside, workspace / "archives" / ARCHIVE)
    with pytest.raises(PlanFileError, match="must be a directory inside the workspace"):
        write_plan_file(workspace, ARCHIVE, EXPECTED_34)
    assert list(outside.iterdir()) == []


def _racing_mkdir(monkeypatch, make_instead):
    """os.mkdir as the planfile writer sees it when another write makes the same
    directory between its lstat and its mkdir: `make_instead(path, real_mkdir)` runs
    first."""
    real = os.mkdir

    def mkdir(path, mode=0o777, *args, **kwargs):
        make_instead(Path(path), real)
        return real(path, mode, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir)


def test_a_directory_another_write_makes_first_is_used(tmp_path, monkeypatch):
    # The first proposals of several sessions in a fresh workspace all make `archives`
    # at once; the one that lost the race was answered 500 (FileExistsError).
    _racing_mkdir(monkeypatch, lambda path, mkdir: mkdir(path))
    write_plan_file(tmp_path, ARCHIVE, EXPECTED_34)
    assert read_plan_file(tmp_path, ARCHIVE) == EXPECTED_34


def test_a_symlink_another_write_makes_first_is_refused_not_followed(tmp_path, monkeypatch):
    outside = tmp_path / "outside"
    outside.mkdir()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    _racing_mkdir(monkeypatch, lambda path, _: os.symlink(outside, path))
    with pytest.raises(PlanFileError, match="must be a directory inside the workspace"):
        write_plan_file(workspace, ARCHIVE, EXPECTED_34)
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("archive_id", ["..", "a/b", "", "a b", "chat\0"])
def test_an_archive_id_that_is_not_one_safe_segment_is_refused(tmp_path, archive_id):
    with pytest.raises(PlanFileError, match="archive_id: must be letters, digits, - and _ only"):
        write_plan_file(tmp_path, archive_id, EXPECTED_34)
    assert list(Path(tmp_path).iterdir()) == []


def test_83_a_read_back_that_does_not_verify_is_blocked(tmp_path, monkeypatch):
    # The file system hands back something else than was written (an empty file).
    import plans.planfile.write as write_module

    monkeypatch.setattr(write_module, "read_plan_file", lambda workspace, archive_id: "")
    with pytest.raises(PlanFileBlocked) as raised:
        write_plan_file(tmp_path, ARCHIVE, EXPECTED_34)
    assert str(raised.value) == (
        "ARCHIVE_STATUS: BLOCKED\nARCHIVE_REASON: read-back failed: PLAN.md is missing or empty"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (EXPECTED_34.replace("减少", "\ud800"), "without lone surrogates"),
        (EXPECTED_34 + "  " + "x" * (1024 * 1024), "at most 1048576 bytes"),
    ],
)
def test_text_that_cannot_be_a_plan_md_writes_nothing(tmp_path, text, message):
    with pytest.raises(PlanFileError, match=message):
        write_plan_file(tmp_path, ARCHIVE, text)
    assert not (tmp_path / "archives").exists()


def test_a_missing_workspace_is_named(tmp_path):
    with pytest.raises(PlanFileError, match="workspace: .* is not a directory"):
        write_plan_file(tmp_path / "gone", ARCHIVE, EXPECTED_34)
    assert not (tmp_path / "gone").exists()


def test_a_sparse_giant_plan_md_is_not_read_and_a_symlinked_one_not_followed(tmp_path):
    directory = tmp_path / "archives" / ARCHIVE
    directory.mkdir(parents=True)
    with open(directory / "PLAN.md", "wb") as handle:
        handle.truncate(40 * 1024**3)  # sparse: 40 GB that take no disk
    with pytest.raises(PlanFileError, match="is larger than 1048576 bytes"):
        read_plan_file(tmp_path, ARCHIVE)
    (directory / "PLAN.md").unlink()
    secret = tmp_path / "secret.md"
    secret.write_text(EXPECTED_34, encoding="utf-8")
    os.symlink(secret, directory / "PLAN.md")
    with pytest.raises(PlanFileError, match="is a symlink; only a plain file of its own is read"):
        read_plan_file(tmp_path, ARCHIVE)
    # A symlinked archive directory is not followed on reading either.
    os.unlink(directory / "PLAN.md")
    directory.rmdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "PLAN.md").write_text(EXPECTED_34, encoding="utf-8")
    os.symlink(elsewhere, directory)
    with pytest.raises(PlanFileError, match="must be a directory inside the workspace"):
        read_plan_file(tmp_path, ARCHIVE)


def test_a_fifo_in_place_of_plan_md_is_not_read(tmp_path):
    directory = tmp_path / "archives" / ARCHIVE
    directory.mkdir(parents=True)
    os.mkfifo(directory / "PLAN.md")
    with pytest.raises(PlanFileError, match="is not a regular file"):
        read_plan_file(tmp_path, ARCHIVE)
