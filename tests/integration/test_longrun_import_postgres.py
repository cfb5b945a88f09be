"""import-state on PostgreSQL (D-B27): the columns there hold their lengths and types.

SQLite stores a string of any length in a varchar and a NUL in text; here
the database refuses both, so a check the import missed would be an error
out of the import. The hostile files of tests/longrun/test_statefile_hostile.py
run here too, and a file of values at the very edges of what the columns and
the years a task may hold allow.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings

from longrun import selectors
from longrun.models import LongTask, SessionLock
from tests.conftest import manage
from tests.longrun.conftest import K
from tests.longrun.test_statefile_hostile import check_hostile_import, state_files

pytestmark = pytest.mark.usefixtures("real_services")


@settings(max_examples=25, deadline=None)
@given(state_files())
def test_it_imports_every_valid_record_of_a_hostile_file_on_postgresql(file):
    check_hostile_import(file)


def test_it_imports_the_edges_of_each_column_and_skips_one_past_them(tmp_path):
    edge = {
        "state": "executing",
        "origin_session_key": K,
        "progress_every": "9999h",
        "last_resume_count": 2**31 - 1,
        "last_resume_reason": "r" * 64,
        "last_progress_message_hash": "f" * 64,
        "goal": "长" * 2000,
        "session": "会" * 200,
        "next_check": "8999-12-31T23:59:59Z",
        "last_progress_at": "1970-01-01T00:00:00Z",
        "updated_at": "8999-12-31T23:59:59+00:00",
        "unknown\u0000field": "ignored, never stored",
    }
    past = {
        "过界计数": {"state": "done", "last_resume_count": 2**31},
        "过界时间": {"state": "done", "updated_at": "9000-01-01T00:00:00Z"},
        "空字符": {"state": "done", "goal": "a\u0000b"},
        "代理项": {"state": "done", "note": "\ud800"},
    }
    path = tmp_path / "task-state.json"
    path.write_text(json.dumps({"tasks": {"边界": edge, **past}}), encoding="utf-8")
    done = manage("longrun", "import-state", str(path))
    assert (done.returncode, done.stderr) == (1, "")
    report = json.loads(done.stdout)
    assert report["imported"] == ["边界"]
    assert {item["task"] for item in report["skipped"]} == set(past)
    task = LongTask.objects.get()
    assert (task.progress_every_seconds, task.last_resume_count) == (9999 * 3600, 2**31 - 1)
    assert task.next_check_at == task.updated_at  # the last second a task may hold
    assert list(SessionLock.objects.values_list("origin_session_key", flat=True)) == [K]
    exported = selectors.state_export().body["tasks"]["边界"]
    assert exported["updated_at"] == "9000-01-01T07:59:59+08:00"
