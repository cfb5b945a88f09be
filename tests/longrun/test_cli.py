"""The command line as agents run it: `manage.py longrun <script>` and `xworkmate-longrun`
as real processes, on the original scripts' flags, output and exit codes (D-B18).

Each script runs at least once, and each refusal of the contract (an unknown
state, no session key for an active state, a lock held by another task, an
unparseable duration, an unknown task, a bad flag) with the original's error
on stderr, its exit code, and the store unchanged. The processes read the
rows this test commits (hence transaction=True) on the real clock, so times
are set relative to now. Exact texts on a frozen clock: test_cli_output.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import NamedTuple

import pytest
from django.utils import timezone

from longrun import selectors
from longrun.models import LongTask, TaskEvent
from tests.conftest import ROOT, manage, subprocess_database_url
from tests.longrun.conftest import FIXTURE, K2, SET_ARGS, K, task_set

pytestmark = pytest.mark.django_db(transaction=True)



class Ran(NamedTuple):
    code: int
    out: str
    err: str

    @property
    def json(self):
        return json.loads(self.out)


def longrun(*args: str, env: dict[str, str] | None = None) -> Ran:
    done = manage("longrun", *args, env=env)
    return Ran(done.returncode, done.stdout, done.stderr)


def longrun_all(*calls: tuple[str, ...]) -> list[Ran]:
    """Several invocations at once (each its own process; none of them may write)."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda args: longrun(*args), calls))


def ago(**delta: float):
    return timezone.now() - timedelta(**delta)


def store():
    return selectors.state_export().body


def test_task_state_set_stores_and_refuses_as_the_original():
    first = longrun("task_state.py", "set", "--task", "A", "--state", "executing",
                    "--origin-session-key", K, *SET_ARGS)  # fmt: skip
    assert (first.code, first.err) == (0, "")
    assert first.json == selectors.task_show(name="A").body
    before = store()
    locked, invalid, no_key, bad_every, missing = longrun_all(
        ("task_state.py", "set", "--task", "B", "--state", "analyzing",
         "--origin-session-key", K, *SET_ARGS),
        ("task_state", "set", "--task", "B", "--state", "running", *SET_ARGS),
        ("task_state.py", "set", "--task", "B", "--state", "waiting", *SET_ARGS),
        ("task_state.py", "set", "--task", "A", "--state", "executing",
         "--progress-every", "5 min", *SET_ARGS),
        ("task_state.py", "set", "--task", "B", "--state", "executing"),
    )  # fmt: skip
    assert (locked.code, locked.out) == (3, "")
    assert json.loads(locked.err) == {
        "error": "session lock exists", "origin_session_key": K, "current_task": "A",
        "requested_task": "B",
    }  # fmt: skip
    assert invalid == (2, "", "invalid state: running\n")
    assert (no_key.code, json.loads(no_key.err)["error"]) == (4, "missing origin_session_key")
    assert (bad_every.code, bad_every.out) == (2, "")
    assert bad_every.err.startswith("invalid progress_every: '5 min' is not a duration")
    assert (missing.code, missing.out) == (2, "")
    assert "task_state.py set: error: the following arguments are required: --session" in missing.err
    assert store() == before


def test_task_state_bookkeeping_locks_and_reads():
    task_set(now=ago(minutes=1))
    touched = longrun("task_state.py", "touch-progress", "--task", "A", "--note", "看日志")
    assert touched.code == 0 and touched.json["last_progress_delivery_status"] == "sent"
    assert TaskEvent.objects.get(kind="sent").note == "看日志"
    before = store()
    unknown, conflict, wrong_holder, listed = longrun_all(
        ("task_state.py", "mark-progress-attempt", "--task", "Z", "--error", "gateway 502"),
        ("task_state.py", "acquire-lock", "--session", K, "--task", "C"),
        ("task_state.py", "release-lock", "--session", K, "--task", "C"),
        ("task_state.py", "list"),
    )
    assert unknown == (1, "", "task not found: Z\n")
    assert (conflict.code, conflict.out, json.loads(conflict.err)["ok"]) == (3, "", False)
    assert (wrong_holder.code, wrong_holder.json) == (
        1, {"ok": False, "origin_session_key": K, "task": "C"},
    )  # fmt: skip
    assert listed.code == 0 and listed.out.startswith("- A | executing | 迁移会话 | next=30m | ")
    assert store() == before
    assert longrun("task_state.py", "clear", "--task", "A") == (0, "cleared: A\n", "")
    assert not LongTask.objects.exists()


def test_validate_task_start():
    task_set(now=ago(minutes=1))
    ok, mismatch = longrun_all(
        ("validate_task_start.py", "--task", "A", "--expect-session-key", K),
        ("validate_task_start", "--task", "A", "--expect-session-key", K2),
    )
    assert (ok.code, ok.json["ok"], ok.json["lock_owner"]) == (0, True, "A")
    assert (mismatch.code, mismatch.json["errors"]) == (2, ["origin_session_key_mismatch"])


def test_the_foreground_heartbeat_scripts():
    task_set(now=ago(minutes=4))  # owes progress (3m), not yet stale (10m)
    before = store()
    check, build, tick, cycle, emit, dispatch = longrun_all(
        ("check_foreground_progress.py", "--task", "A"),
        ("build_progress_update.py", "--task", "A"),
        ("foreground_tick.py", "--task", "A"),
        ("work_cycle_tick.py", "--task", "A", "--step", "读完日志"),
        ("emit_foreground_due.py",),
        ("dispatch_foreground_due.py", "--unknown-cooldown-minutes", "2"),
    )
    assert (check.code, check.json["due"], check.json["reason"]) == (1, True, "progress_due (3m)")
    assert build.code == 0 and build.json["message"].startswith("长任务进度提醒：A\n")
    assert (tick.code, tick.json["sessionKey"]) == (1, K)
    assert (cycle.code, cycle.json["must_send_now"], cycle.json["step"]) == (1, True, "读完日志")
    assert (emit.code, [e["task"] for e in emit.json["events"]]) == (1, ["A"])
    assert (dispatch.code, dispatch.json["dispatches"][0]["tool"]) == (1, "sessions_send")
    assert store() == before  # described, not sent


def test_the_keepalive_scripts():
    task_set(now=ago(minutes=4))
    tick, emit, bad = longrun_all(
        ("keepalive_tick.py", "--task", "A"),
        ("emit_keepalive_resume.py", "--task", "A", "--idle-seconds", "60"),
        ("keepalive_tick.py", "--task", "A", "--idle-seconds", "a minute"),
    )
    assert (tick.code, tick.json["should_resume"], tick.json["reason"]) == (1, True, "idle_timeout")
    assert (emit.code, emit.json["events"][0]["kind"]) == (1, "keepalive-resume")
    assert (bad.code, bad.out) == (2, "")
    assert bad.err.endswith("argument --idle-seconds: invalid int value: 'a minute'\n")
    once = longrun("run_keepalive_once.py", "--idle-seconds", "60")
    assert (once.code, once.json["dispatch_count"], once.json["dispatches"][0]["status"]) == (
        0, 1, "planned",
    )  # fmt: skip
    assert LongTask.objects.get().last_progress_attempt_at is not None


def test_the_watchdog_scripts():
    task_set("B", state="analyzing", key=K2, next_check="等CI", now=ago(minutes=11))
    task_set(now=ago(minutes=4))
    check, text, recover, emit, payloads = longrun_all(
        ("watchdog.py", "check", "--json"),
        ("watchdog", "check", "--stale-minutes", "10"),
        ("recover_due_tasks.py", "--json"),
        ("emit_recovery_message.py",),
        ("build_sessions_send_payloads.py", "--stale-minutes", "10"),
    )
    assert (check.code, [d["task"] for d in check.json["due"]]) == (1, ["B"])
    assert [p["task"] for p in check.json["progress"]] == ["A"]
    assert text.code == 1 and text.out.startswith("watchdog: tasks needing follow-up\n- B | ")
    assert recover.json["items"][0]["recovery"]["kind"] == "force-decision"
    assert emit.code == 1 and emit.out.startswith("长任务回收提醒：B\n")
    assert (payloads.code, len(payloads.json["payloads"])) == (1, 2)
    once = longrun("run_watchdog_once.py")
    assert (once.code, [p["status"] for p in once.json["payloads"]]) == (1, ["queued", "queued"])
    assert TaskEvent.objects.filter(kind="queued").count() == 2


def test_cleanup_state():
    task_set(now=ago(minutes=1))
    task_set("回归-1", state="done", key=K2, now=ago(minutes=1))
    dry = longrun("cleanup_state.py", "--drop-test-prefix", "tmp-")
    assert (dry.code, dry.json["dropped"], dry.json["apply"]) == (
        0, [{"task": "回归-1", "reason": "matched_drop_rule"}], False,
    )  # fmt: skip
    assert LongTask.objects.count() == 2
    applied = longrun("cleanup_state", "--apply", "--drop-task", "A")
    assert (applied.code, applied.json["task_count_after"]) == (0, 0)
    assert not LongTask.objects.exists()


def test_the_shell_helpers(tmp_path):
    cron = longrun("install_watchdog_cron.sh", "10")
    assert cron.code == 0 and cron.out.splitlines()[3].startswith("*/10 * * * * ")
    task_set(now=ago(minutes=4))
    log = tmp_path / "watchdog.log"
    loop = _start("watchdog_loop.sh", env={"INTERVAL_SECONDS": "1", "LOG_FILE": str(log)})
    try:
        deadline = time.monotonic() + 60
        while not log.exists() or log.read_text("utf-8").count("watchdog tick") < 2:
            assert loop.poll() is None, loop.communicate()
            assert time.monotonic() < deadline, "the loop wrote no second tick"
            time.sleep(0.2)
    finally:
        loop.send_signal(signal.SIGTERM)
        loop.wait(timeout=30)
    text = log.read_text("utf-8")
    assert '"due_count": 0' in text and '"progress_count": 1' in text
    assert '"scanned_active_tasks": 1' in text


def _start(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    """`manage.py longrun …` in the background on this test's database (see manage())."""
    full = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings",
            "DATABASE_URL": subprocess_database_url(), **env}  # fmt: skip
    return subprocess.Popen(
        [sys.executable, "manage.py", "longrun", *args], cwd=ROOT, env=full, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def test_detect_trigger():
    task_set(now=ago(minutes=1))
    enter, going_on = longrun_all(
        ("detect-trigger", "--message", "进入长任务模式，帮我迁移数据库"),
        ("detect-trigger", "--message", "继续", "--session-key", K),
    )
    assert (enter.code, enter.json["mode"], enter.json["phrase"]) == (1, "enter", "进入长任务模式")
    assert (going_on.code, going_on.json["mode"], going_on.json["active_task"]) == (
        1, "continue", "A",
    )  # fmt: skip


def test_import_and_export_state(tmp_path):
    imported = longrun("import-state", str(FIXTURE))
    assert (imported.code, len(imported.json["imported"]), len(imported.json["skipped"])) == (
        1, 6, 5,
    )  # fmt: skip
    exported = longrun("export-state")
    assert exported.code == 0 and exported.json == store()
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    before = store()
    broken = longrun("import-state", str(tmp_path / "broken.json"), "--replace")
    assert (broken.code, broken.out) == (1, "")
    assert broken.err.startswith("failed to read state file: Expecting property name")
    assert store() == before


def test_an_unknown_script_exits_2():
    unknown = longrun("taskstate.py", "list")
    assert (unknown.code, unknown.out) == (2, "")
    assert unknown.err.endswith("manage.py longrun: error: unknown script 'taskstate.py'\n")


def test_the_console_script_sets_its_own_settings_and_runs_the_same_code():
    script = Path(sys.executable).with_name("xworkmate-longrun")
    assert script.exists(), "install the project (pip install -e .) for its console script"
    task_set(now=ago(minutes=1))
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    # xworkmate.settings, given this test's database as DATABASE_URL.
    env["DATABASE_URL"] = subprocess_database_url()
    shown = subprocess.run(
        [str(script), "task_state.py", "show", "--task", "A"], capture_output=True, text=True,
        env=env, cwd="/", timeout=120, check=False,
    )  # fmt: skip
    assert (shown.returncode, shown.stderr) == (0, "")
    assert json.loads(shown.stdout) == selectors.task_show(name="A").body
