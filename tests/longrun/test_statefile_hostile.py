"""import-state never crashes (D-B27): hostile state files, generated and hand-written.

Whatever the file holds, the command ends with its exit code and either one
line on stderr (a file it cannot read at all, nothing changed) or its report
on stdout: every record imported or skipped with its reason, and the store
holding exactly the imported records, each whole and each one the service
can go on working with (export-state prints it back).
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from longrun.cli import run
from longrun.models import LongTask, SessionLock
from longrun.policies.answers import LongrunError
from longrun.policies.statefile import STATE_FILE_MAX_CHARS, read_state
from longrun.policies.states import ACTIVE_STATES, DELIVERY_STATUSES, STATES
from longrun.policies.timing import parse_next_check
from tests.conftest import manage
from tests.longrun.conftest import FIXTURE, T0, K, task_set
from xworkmate.lib.durations import format_duration
from xworkmate.lib.timezones import get_zone

pytestmark = pytest.mark.django_db

SHANGHAI = get_zone("Asia/Shanghai")
# The times of a record: its fields ending in _at, as the fixture's full record holds them.
_TIMES = tuple(
    field
    for field in json.loads(FIXTURE.read_text(encoding="utf-8"))["tasks"]["迁移数据库"]
    if field.endswith("_at")
)
# Free texts a record may hold; `session` is left out of the attacks, since a
# session_label beside it wins and the value is never read.
_TEXTS = (
    "goal", "done_when", "blocked_when", "boundary", "next_check", "note", "session_label",
    "last_progress_send_error", "last_resume_reason", "last_progress_message_hash",
)  # fmt: skip
_KEYS = tuple(f"agent:main:telegram:dm:20{n}" for n in range(4))


# --- what a file may hold -----------------------------------------------------------------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
_TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\0"), max_size=30)
_WORD = st.text(st.characters(categories=("L", "N")), min_size=1, max_size=10)
_OFFSET = st.none() | st.integers(-(24 * 60 - 1), 24 * 60 - 1).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)


def _moments(low: datetime, high: datetime) -> st.SearchStrategy[str]:
    """ISO times between `low` and `high` (wall clock), naive or with any offset."""
    return st.builds(
        lambda when, zone: when.replace(tzinfo=zone).isoformat(),
        st.datetimes(min_value=low, max_value=high),
        _OFFSET,
    )


# A day inside the years a task may hold (1970 to 8999), whatever the offset.
_GOOD_TIME = _moments(datetime(1970, 1, 3), datetime(8999, 12, 29))
_BAD_TIME = st.sampled_from(
    [
        "0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00",
        "9999-12-31T23:59:59", "9999-12-31T23:59:59.999999+00:00", "1969-12-31T23:59:59Z",
        "9000-01-01T00:00:00Z",
    ]
) | _moments(datetime.min, datetime(1969, 12, 30)) | _moments(datetime(9000, 1, 2), datetime.max)  # fmt: skip
_DURATION = st.integers(1, 9999 * 3600).map(
    lambda seconds: format_duration(timedelta(seconds=seconds))
)


@st.composite
def _valid(draw: st.DrawFn, name: str) -> dict[str, Any]:
    """A record `set` could have stored, with the original's nulls and missing fields."""
    state = draw(st.sampled_from(STATES))
    record: dict[str, Any] = {"state": state}
    if draw(st.booleans()):
        record["task"] = name
    if state in ACTIVE_STATES or draw(st.booleans()):
        record["origin_session_key"] = draw(st.sampled_from(_KEYS))
    for text in _TEXTS:
        if draw(st.booleans()):
            record[text] = draw(st.none() | _TEXT)
    optional = {
        "progress_every": st.none() | st.just("") | _DURATION,
        "last_progress_delivery_status": st.sampled_from((None, "", *DELIVERY_STATUSES)),
        "last_progress_delivery_id": st.none() | _WORD,
        "last_resume_count": st.none() | st.integers(0, 2**31 - 1),
        **{moment: st.none() | st.just("") | _GOOD_TIME for moment in _TIMES},
    }
    for key, values in optional.items():
        if draw(st.booleans()):
            record[key] = draw(values)
    return record


def _with(record: dict[str, Any], key: str, value: object) -> str:
    return json.dumps({**record, key: value})


def _wrong_type(record: dict[str, Any], draw: st.DrawFn) -> str:
    field = draw(st.sampled_from((*_TEXTS, *_TIMES, "last_resume_count", "progress_every")))
    value = draw(_JSON.filter(lambda value: value is not None and not isinstance(value, str)))
    if field == "last_resume_count" and type(value) is int and value >= 0:
        value = -1 - value
    return _with(record, field, value)


def _doomed_fragments(name: str, record: dict[str, Any], draw: st.DrawFn) -> str:
    """The record's JSON text with one thing `set` could never have stored."""
    attack = draw(st.integers(0, 12))
    text = json.dumps(record)
    if attack == 0:  # a time that overflows once its offset (or the zone) is applied
        return _with(record, draw(st.sampled_from(_TIMES)), draw(_BAD_TIME))
    if attack == 1:
        return _wrong_type(record, draw)
    if attack == 2:  # NUL or a lone surrogate in a text
        bad = draw(st.sampled_from(("\0", "\ud800", "\udfff")))
        return _with(record, draw(st.sampled_from(_TEXTS)), draw(_TEXT) + bad)
    if attack == 3:  # longer than its column
        return _with(record, draw(st.sampled_from(_TEXTS)), "长" * 2001)
    if attack == 4:
        return _with(record, "state", draw(_JSON.filter(lambda value: value not in STATES)))
    if attack == 5:  # past the integer column, and past int()'s 4300 digits
        count = draw(st.sampled_from(("2147483648", "9" * 5000, "-1", "1.5", "true", "NaN")))
        return text[:-1] + f', "last_resume_count": {count}' + "}"
    if attack == 6:
        every = draw(st.sampled_from(("5 min", "0s", "10000h", "9" * 5000 + "s", "\ud800")))
        return _with(record, "progress_every", every)
    if attack == 7:  # deeper than 128 levels, in a field the original never wrote
        depth = draw(st.integers(129, 200))
        return text[:-1] + ', "extra": ' + "[" * depth + "]" * depth + "}"
    if attack == 8:  # a field named twice: which one was meant?
        return text[:-1] + ', "state": "done"}'
    if attack == 9:
        return json.dumps(draw(_JSON.filter(lambda value: not isinstance(value, dict))))
    if attack == 10:
        return _with(record, "task", draw(_JSON.filter(lambda value: value != name)))
    if attack == 11:  # shown in its reason, cut short
        return _with(record, draw(st.sampled_from(_TIMES)), "昨" * draw(st.integers(100, 5000)))
    return _with(record, "updated_at", draw(st.sampled_from(("yesterday", "2026-02-30T00:00:00"))))


_BAD_NAMES = st.sampled_from(("", " 留白", "尾空 ", "\0", "名\ud800", "长" * 201))


@st.composite
def state_files(draw: st.DrawFn) -> tuple[str, set[str], set[str]]:
    """A state file's text, the names `set` could have stored, and the names it could not."""
    names = draw(st.lists(_WORD, unique=True, max_size=12))
    entries: list[tuple[str, str]] = []
    valid: set[str] = set()
    doomed: set[str] = set()
    for name in names:
        record = draw(_valid(name))
        kind = draw(st.sampled_from(("valid", "doomed", "anything")))
        if kind == "valid":
            entries.append((name, json.dumps(record)))
            valid.add(name)
        elif kind == "doomed":
            entries.append((name, _doomed_fragments(name, record, draw)))
            doomed.add(name)
        else:  # any value in any field: imported or skipped, never a crash
            field = draw(st.sampled_from(sorted({*record, *_TEXTS, *_TIMES})))
            entries.append((name, _with(record, field, draw(_JSON))))
    for name in draw(st.lists(_BAD_NAMES, unique=True, max_size=3)):
        entries.append((name, json.dumps({"state": "done"})))
        doomed.add(name)
    if draw(st.booleans()) and valid:  # a task the file names twice
        twice = draw(st.sampled_from(sorted(valid)))
        entries.append((twice, json.dumps({"state": "done"})))
        valid.discard(twice)
        doomed.add(twice)
    entries = draw(st.permutations(entries))
    locks = draw(
        st.dictionaries(
            st.sampled_from(_KEYS) | st.text(max_size=6),
            st.sampled_from(names) | _JSON | st.just(""),
            max_size=4,
        )
        if names
        else st.dictionaries(st.text(max_size=6), _JSON, max_size=2)
    )
    tasks = ", ".join(f"{json.dumps(name)}: {fragment}" for name, fragment in entries)
    legacy = f', "active_long_run": {json.dumps(names[0])}' if draw(st.booleans()) and names else ""
    text = f'{{"tasks": {{{tasks}}}, "active_long_runs_by_session": {json.dumps(locks)}{legacy}}}'
    return text, valid, doomed


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(list(argv), prog="xworkmate-longrun", stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


# --- the property --------------------------------------------------------------------------------


def check_hostile_import(file: tuple[str, set[str], set[str]]) -> None:
    """import-state of one of `state_files`: every valid record in, every doomed one out."""
    text, valid, doomed = file
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "task-state.json"
        path.write_text(text, encoding="utf-8")
        code, out, err = _cli("import-state", str(path), "--replace")
    assert err == ""
    report = json.loads(out)
    imported = set(report["imported"])
    skipped = {item["task"]: item["reason"] for item in report["skipped"]}
    assert valid <= imported
    assert doomed <= set(skipped)
    assert not imported & set(skipped)
    # A reason is a sentence, whatever the value: its field and rule, the value cut short.
    assert all(isinstance(reason, str) and 0 < len(reason) <= 301 for reason in skipped.values())
    assert code == (1 if skipped else 0)
    # The store holds the imported records and nothing of the others.
    live = LongTask.objects.filter(archived_at__isnull=True)
    assert set(live.values_list("name", flat=True)) == imported
    for lock in SessionLock.objects.select_related("task"):
        assert lock.task.state in ACTIVE_STATES
        assert lock.origin_session_key == lock.task.origin_session_key
    # And the service goes on working with them: every time prints in the zone.
    code, out, err = _cli("export-state")
    assert (code, err) == (0, "")
    assert set(json.loads(out)["tasks"]) == imported


@settings(max_examples=40, deadline=None)
@given(state_files())
def test_it_imports_every_valid_record_of_a_hostile_file_and_skips_the_rest_with_a_reason(file):
    check_hostile_import(file)


@settings(max_examples=150, deadline=None)
@given(
    _JSON
    | st.fixed_dictionaries(
        {"tasks": st.dictionaries(st.text(max_size=6), _JSON | st.builds(dict, state=_JSON))},
        optional={"active_long_runs_by_session": _JSON, "active_long_run": _JSON},
    )
)
def test_it_reads_any_json_document_or_refuses_it_as_a_file(document):
    try:
        read = read_state(document, zone=SHANGHAI, now=T0)
    except LongrunError as refused:
        assert refused.exit_code == 1
        assert refused.text.startswith("failed to read state file: ")
        return
    assert sorted([task.name for task in read.tasks] + [s["task"] for s in read.skipped]) == sorted(
        document["tasks"]
    )


# --- hand-written files, through the command as agents run it -------------------------------------


def _mixed_file() -> str:
    good = {
        "state": "executing",
        "origin_session_key": K,
        "updated_at": "2026-04-02T11:58:30+08:00",
    }
    records = [
        ("迁移数据库", json.dumps(good)),
        ("年初", json.dumps({"state": "done", "updated_at": "0001-01-01T00:00:00+05:00"})),
        ("年末", json.dumps({"state": "done", "last_progress_at": "9999-12-31T23:59:59-05:00"})),
        ("无时区", json.dumps({"state": "done", "updated_at": "0001-01-01T00:00:00"})),
        ("深", '{"state": "done", "note": ' + "[" * 300 + "]" * 300 + "}"),
        ("大数", '{"state": "done", "last_resume_count": ' + "9" * 5000 + "}"),
        ("两次", '{"state": "done", "state": "executing"}'),
        ("长时间", json.dumps({"state": "done", "updated_at": "昨天" * 5000})),
        ("长间隔", json.dumps({"state": "done", "progress_every": "9" * 5000 + "s"})),
        ("名\\u0000", '{"state": "done"}'),
        ("名\\ud800", '{"state": "done"}'),
        ("重名", '{"state": "done"}'),
        ("重名", '{"state": "blocked"}'),
    ]
    tasks = ", ".join(f'"{name}": {record}' for name, record in records)
    return f'{{"tasks": {{{tasks}}}, "active_long_runs_by_session": {{"{K}": "迁移数据库"}}}}'


@pytest.mark.django_db(transaction=True)
def test_it_reports_each_hostile_record_of_a_file_and_imports_the_rest_without_a_traceback(
    tmp_path,
):
    path = tmp_path / "task-state.json"
    path.write_text(_mixed_file(), encoding="utf-8")
    done = manage("longrun", "import-state", str(path))
    assert (done.returncode, done.stderr) == (1, "")
    report = json.loads(done.stdout)
    assert report["imported"] == ["迁移数据库"]
    # A reason quoting its value whole (the duration's own message) keeps its head and tail.
    every = next(item for item in report["skipped"] if item["task"] == "长间隔")
    report["skipped"].remove(every)
    assert len(every["reason"]) == 301
    assert every["reason"].startswith("invalid progress_every: '999")
    assert every["reason"].endswith("999s' is longer than any duration can be")
    time_rule = "must be a time from 1970-01-01 to 8999-12-31 (UTC)"
    long_time = "'" + "昨天" * 13 + "昨..." + "昨天" * 14 + "'"  # cut to 60 characters
    assert report["skipped"] == [
        {"task": "年初", "reason": f"invalid updated_at: '0001-01-01T00:00:00+05:00' {time_rule}"},
        {
            "task": "年末",
            "reason": f"invalid last_progress_at: '9999-12-31T23:59:59-05:00' {time_rule}",
        },
        {"task": "无时区", "reason": f"invalid updated_at: '0001-01-01T00:00:00' {time_rule}"},
        {"task": "深", "reason": "invalid note: nested deeper than 128 levels"},
        {"task": "大数", "reason": "invalid last_resume_count: inf (a whole number, 0 or more)"},
        {"task": "两次", "reason": "invalid state: the record names it more than once"},
        {"task": "长时间", "reason": f"invalid updated_at: {long_time} is not an ISO 8601 time"},
        {"task": "重名", "reason": "the file holds more than one record under this name"},
        # The names are the store's to check, after the file's own rules.
        {
            "task": "名\0",
            "reason": "invalid task: must not contain a NUL character or a lone surrogate",
        },
        {
            "task": "名\ud800",
            "reason": "invalid task: must not contain a NUL character or a lone surrogate",
        },
    ]
    assert list(LongTask.objects.values_list("name", flat=True)) == ["迁移数据库"]
    assert list(SessionLock.objects.values_list("origin_session_key", flat=True)) == [K]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (
            '{"tasks": {"A": ' + '{"a": ' * 100_000,
            "the file nests arrays and objects too deeply to read",
        ),
        (" " * (STATE_FILE_MAX_CHARS + 1), "the file is longer than 50,000,000 characters"),
        ("[]", "the document is not a JSON object"),
        ("NaN", "the document is not a JSON object"),
        (
            '{"tasks": {}, "tasks": {"A": {"state": "done"}}}',
            "top-level keys named more than once: 'tasks'",
        ),
        (
            '{"tasks": {}, "active_long_runs_by_session": {"k": "A", "k": "B"}}',
            "'active_long_runs_by_session' names session keys more than once: 'k'",
        ),
        (b"\xff{}", "'utf-8' codec can't decode byte 0xff in position 0: invalid start byte"),
        (None, "[Errno 21] Is a directory: '{path}'"),
    ],
)
def test_it_refuses_a_file_it_cannot_read_in_one_line_and_changes_nothing(
    tmp_path, content, reason
):
    task_set()
    path = tmp_path / "task-state.json"
    if content is None:
        path.mkdir()
    else:
        (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)
    assert _cli("import-state", str(path), "--replace") == (
        1, "", f"failed to read state file: {reason.format(path=path)}\n",
    )  # fmt: skip
    assert list(LongTask.objects.values_list("name", flat=True)) == ["A"]


@pytest.mark.django_db(transaction=True)
def test_it_refuses_a_file_nested_past_the_decoder_as_a_process_without_a_traceback(tmp_path):
    task_set()
    path = tmp_path / "task-state.json"
    path.write_text("[" * 100_000, encoding="utf-8")
    done = manage("longrun", "import-state", str(path), "--replace")
    assert (done.returncode, done.stdout) == (1, "")
    assert (
        done.stderr
        == "failed to read state file: the file nests arrays and objects too deeply to read\n"
    )
    assert list(LongTask.objects.values_list("name", flat=True)) == ["A"]


@pytest.mark.django_db(transaction=True)
def test_it_imports_a_file_whose_name_is_not_utf8(tmp_path):
    path = os.fsdecode(bytes(tmp_path) + b"/state-\xff.json")
    Path(path).write_text('{"tasks": {"A": {"state": "done"}}}', encoding="utf-8")
    done = manage("longrun", "import-state", path)
    assert (done.returncode, done.stderr) == (0, "")
    report = json.loads(done.stdout)
    assert (report["imported"], report["source"]) == (["A"], f"{tmp_path}/state-\\xff.json")
    assert (
        LongTask.objects.get().transitions.get().note
        == f"imported from {tmp_path}/state-\\xff.json"
    )


@pytest.mark.parametrize(
    "text", ["9000-01-01T00:00:00Z", "1969-12-31T23:59:59Z", "9999-12-31T23:00:00+00:00"]
)
def test_a_checkpoint_outside_the_times_a_task_may_hold_is_none(text):
    assert parse_next_check(text, anchor=T0, zone=SHANGHAI) is None
    assert parse_next_check("8999-12-31T23:59:59Z", anchor=T0, zone=SHANGHAI) is not None
