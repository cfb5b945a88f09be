"""The command line in process, on a frozen clock: each script's exact output and exit code.

tests/longrun/test_cli.py runs the same scripts as real processes; here the
clock is T0 so every printed time and message can be compared whole.
"""

from __future__ import annotations

import io
import json
from datetime import datetime

import pytest
import time_machine

from longrun import selectors
from longrun.cli import SCRIPTS, run
from longrun.models import LongTask, TaskEvent
from tests.longrun.conftest import FIXTURE, K2, SET_ARGS, T0, T0_TEXT, K, at, task_set

pytestmark = pytest.mark.django_db



def cli(*argv: str, now: datetime = T0) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with time_machine.travel(now, tick=False):
        code = run(list(argv), prog="xworkmate-longrun", stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def as_json(text: str):
    assert text.endswith("\n")
    return json.loads(text)


def printed(body) -> str:
    """What the original printed for a JSON document."""
    return json.dumps(body, ensure_ascii=False, indent=2) + "\n"


def set_a(*more: str, now: datetime = T0) -> tuple[int, str, str]:
    return cli("task_state.py", "set", "--task", "A", "--state", "executing",
               "--origin-session-key", K, *SET_ARGS, *more, now=now)  # fmt: skip


# --- names, usage, argument errors --------------------------------------------------------------


def test_a_script_is_named_with_or_without_its_suffix_or_by_skill_md_path():
    assert cli("task_state.py", "list") == cli("task_state", "list") == (0, "no tasks\n", "")
    assert cli("skills/long-run-mode/scripts/task_state.py", "list") == (0, "no tasks\n", "")
    assert cli("install_watchdog_cron.sh")[0] == cli("install_watchdog_cron")[0] == 0
    # Only the script's own suffix.
    assert cli("task_state.sh", "list")[0] == cli("install_watchdog_cron.py")[0] == 2


def test_without_a_script_or_with_an_unknown_one_it_prints_its_usage_and_exits_2():
    code, out, err = cli()
    assert (code, out) == (2, "")
    assert err.startswith("usage: xworkmate-longrun SCRIPT [ARGS ...]")
    assert all(name in err for name in SCRIPTS)
    code, out, err = cli("taskstate.py", "list")  # the seed's spelling, without underscores
    assert (code, out) == (2, "")
    assert err.endswith("xworkmate-longrun: error: unknown script 'taskstate.py'\n")
    code, out, err = cli("--help")
    assert (code, err) == (0, "") and out.startswith("usage: xworkmate-longrun")


def test_argparse_errors_exit_2_with_the_original_program_name():
    code, out, err = cli("task_state.py", "set", "--task", "A")
    assert (code, out) == (2, "")
    assert err.startswith("usage: task_state.py set [-h] --task TASK --session SESSION")
    assert err.endswith(
        "task_state.py set: error: the following arguments are required: --session, --state, "
        "--goal, --done-when, --blocked-when, --boundary, --next-check, --note\n"
    )
    code, _, err = cli("task_state.py", "rename", "--task", "A")
    assert code == 2 and "task_state.py: error: argument command: invalid choice: 'rename'" in err
    code, _, err = cli("watchdog.py", "check", "--stale-minutes", "ten")
    assert code == 2 and err.endswith(
        "watchdog.py check: error: argument --stale-minutes: invalid int value: 'ten'\n"
    )
    code, _, err = cli("run_keepalive_once.py", "--idle-seconds", "0")
    assert code == 2 and err.endswith(
        "run_keepalive_once.py: error: argument --idle-seconds: must be 1 or more (got 0)\n"
    )
    code, out, err = cli("work_cycle_tick.py", "--help")
    assert (code, err) == (0, "")
    assert "Work-cycle hook for long-run tasks: run after each meaningful step" in out
    assert not LongTask.objects.exists()


def test_a_threshold_over_a_year_is_refused_not_overflowed():
    """A run's window must stay inside the dates a datetime holds: a year at most."""
    set_a()
    before = selectors.state_export().body
    for argv, flag, limit in (
        (("watchdog.py", "check", "--stale-minutes", "525601"), "--stale-minutes", 525600),
        (("run_watchdog_once.py", "--stale-minutes", "99999999999"), "--stale-minutes", 525600),
        (("keepalive_tick.py", "--task", "A", "--idle-seconds", "31536001"), "--idle-seconds",
         31536000),
        (("dispatch_foreground_due.py", "--unknown-cooldown-minutes", "10000000000"),
         "--unknown-cooldown-minutes", 525600),
    ):  # fmt: skip
        code, out, err = cli(*argv)
        assert (code, out) == (2, ""), argv
        assert f": error: argument {flag}: must be at most {limit}, a year (got " in err, err
    assert selectors.state_export().body == before
    code, out, _ = cli("watchdog.py", "check", "--stale-minutes", "525600", "--json")
    assert code == 0 and as_json(out)["due"] == []


# --- task_state.py ------------------------------------------------------------------------------


def test_set_prints_the_stored_record():
    code, out, err = set_a("--progress-every", "1h30m")
    assert (code, err) == (0, "")
    assert out == printed(selectors.task_show(name="A").body)
    record = as_json(out)
    assert (record["progress_every"], record["updated_at"], record["origin_session_key"]) == (
        "1h30m", T0_TEXT, K,
    )


def test_set_refusals_print_the_originals_errors_and_change_nothing():
    set_a()
    before = selectors.state_export().body
    code, out, err = cli("task_state.py", "set", "--task", "B", "--state", "running", *SET_ARGS)
    assert (code, out, err) == (2, "", "invalid state: running\n")
    code, out, err = cli("task_state.py", "set", "--task", "B", "--state", "waiting", *SET_ARGS)
    assert (code, out) == (4, "")
    assert err == printed({
        "error": "missing origin_session_key", "task": "B", "state": "waiting",
        "message": "long-run start/update requires a real origin_session_key; state "
        "registration alone does not mean the task started in the target session",
    })  # fmt: skip
    code, out, err = cli("task_state.py", "set", "--task", "B", "--state", "analyzing",
                         "--origin-session-key", K, *SET_ARGS)  # fmt: skip
    assert (code, out) == (3, "")
    assert err == printed({
        "error": "session lock exists", "origin_session_key": K, "current_task": "A",
        "requested_task": "B",
    })  # fmt: skip
    code, out, err = set_a("--progress-every", "5 min", now=at(minutes=1))
    assert (code, out) == (2, "")
    assert err == (
        "invalid progress_every: '5 min' is not a duration like 90s, 3m, 2h or 1h30m "
        "(hours, minutes, seconds)\n"
    )
    # An interval the seconds column could not hold (or a ridiculous one) is refused.
    code, out, err = set_a("--progress-every", "9999h1s", now=at(minutes=1))
    assert (code, out, err) == (2, "", "invalid progress_every: must be at most 9999h\n")
    assert selectors.state_export().body == before
    assert set_a("--progress-every", "9999h", now=at(minutes=1))[0] == 0


def test_a_free_text_next_check_is_kept_without_a_checkpoint():
    code, out, _ = cli("task_state.py", "set", "--task", "A", "--state", "waiting",
                       "--origin-session-key", K, *SET_ARGS[:-4], "--next-check", "等CI",
                       "--note", "n")  # fmt: skip
    assert code == 0 and as_json(out)["next_check"] == "等CI"
    assert LongTask.objects.get().next_check_at is None


def test_leaving_done_needs_reopen():
    cli("task_state.py", "set", "--task", "A", "--state", "done", "--origin-session-key", K,
        *SET_ARGS)  # fmt: skip
    code, out, err = set_a(now=at(minutes=1))
    assert (code, out) == (2, "")
    assert as_json(err)["error"] == "reopen required"
    code, out, _ = set_a("--reopen", now=at(minutes=2))
    assert code == 0 and as_json(out)["state"] == "executing"


def test_the_bookkeeping_subcommands_print_the_record():
    set_a()
    code, out, _ = cli("task_state.py", "touch-progress", "--task", "A", "--note", "看日志",
                       now=at(minutes=1))  # fmt: skip
    record = as_json(out)
    assert code == 0
    assert record["last_progress_sent_at"] == record["last_progress_at"] == "2026-04-02T12:01:00+08:00"
    assert record["note"] == "读取迁移日志"  # the next step stays (D-B8) …
    assert TaskEvent.objects.get(kind="sent").note == "看日志"  # … the note is logged
    code, out, _ = cli("task_state.py", "mark-progress-attempt", "--task", "A", "--error",
                       "gateway 502", now=at(minutes=2))  # fmt: skip
    record = as_json(out)
    assert (record["last_progress_attempt_at"], record["last_progress_send_error"]) == (
        "2026-04-02T12:02:00+08:00", "gateway 502",
    )
    assert record["updated_at"] == "2026-04-02T12:01:00+08:00"  # not activity (D-B9)
    code, out, _ = cli("task_state.py", "mark-progress-unknown", "--task", "A",
                       "--delivery-id", "fg-0123456789abcdef", "--message-hash", "H")  # fmt: skip
    record = as_json(out)
    assert (record["last_progress_delivery_status"], record["last_progress_send_error"]) == (
        "unknown", "delivery result unknown",
    )
    assert (record["last_progress_delivery_id"], record["last_progress_message_hash"]) == (
        "fg-0123456789abcdef", "H",
    )
    code, out, _ = cli("task_state.py", "mark-progress-failed", "--task", "A")
    assert as_json(out)["last_progress_send_error"] == "delivery failed"
    code, out, _ = cli("task_state.py", "mark-progress-sent", "--task", "A", now=at(minutes=3))
    assert as_json(out)["last_progress_delivery_status"] == "sent"
    code, out, _ = cli("task_state.py", "mark-visible-reply", "--task", "A", now=at(minutes=4))
    assert as_json(out)["last_visible_reply_at"] == "2026-04-02T12:04:00+08:00"
    code, out, _ = cli("task_state.py", "mark-tool-result", "--task", "A", now=at(minutes=5))
    assert as_json(out)["last_tool_result_at"] == "2026-04-02T12:05:00+08:00"
    code, out, _ = cli("task_state.py", "mark-resume", "--task", "A")
    assert (as_json(out)["last_resume_reason"], as_json(out)["last_resume_count"]) == ("manual", 1)


@pytest.mark.parametrize(
    "command",
    [
        ("touch-progress",), ("mark-progress-attempt", "--error", "x"), ("mark-progress-sent",),
        ("mark-progress-unknown",), ("mark-progress-failed",), ("mark-visible-reply",),
        ("mark-tool-result",), ("mark-resume",), ("show",), ("clear",),
    ],
)  # fmt: skip
def test_an_unknown_task_is_task_not_found_exit_1(command):
    set_a()
    before = selectors.state_export().body
    code, out, err = cli("task_state.py", command[0], "--task", "Z", *command[1:])
    assert (code, out, err) == (1, "", "task not found: Z\n")
    assert selectors.state_export().body == before


def test_locks_list_show_and_clear():
    set_a()
    code, out, err = cli("task_state.py", "acquire-lock", "--session", K, "--task", "C")
    assert (code, out) == (3, "")
    assert as_json(err) == {
        "ok": False, "error": "session lock exists", "origin_session_key": K,
        "current_task": "A", "requested_task": "C",
    }  # fmt: skip
    assert cli("task_state.py", "release-lock", "--session", K, "--task", "C") == (
        1, printed({"ok": False, "origin_session_key": K, "task": "C"}), "",
    )  # fmt: skip
    assert cli("task_state.py", "locks") == (0, printed({K: "A"}), "")
    assert cli("task_state.py", "list") == (
        0, f"- A | executing | 迁移会话 | next=30m | updated={T0_TEXT}\n", "",
    )  # fmt: skip
    assert cli("task_state.py", "release-lock", "--session", K) == (
        0, printed({"ok": True, "origin_session_key": K, "task": None}), "",
    )  # fmt: skip
    assert cli("task_state.py", "acquire-lock", "--session", K2, "--task", "A") == (
        0, printed({"ok": True, "origin_session_key": K2, "task": "A"}), "",
    )  # fmt: skip
    assert cli("task_state.py", "clear", "--task", "A") == (0, "cleared: A\n", "")
    set_a()
    assert cli("task_state.py", "clear") == (0, "cleared all tasks\n", "")
    assert cli("task_state.py", "locks") == (0, "{}\n", "")


# --- validation, heartbeat, keepalive -----------------------------------------------------------


def test_validate_task_start():
    set_a()
    code, out, _ = cli("validate_task_start.py", "--task", "A", "--expect-session-key", K)
    assert code == 0 and out == printed(
        selectors.task_start_validation(name="A", expect_session_key=K).body
    )
    code, out, _ = cli("validate_task_start.py", "--task", "A", "--expect-state", "done",
                       "--expect-state", "waiting")  # fmt: skip
    assert code == 2
    assert as_json(out)["errors"] == ["state_mismatch:executing"]
    assert as_json(out)["expected_states"] == ["done", "waiting"]
    code, out, err = cli("validate_task_start.py", "--task", "Z")
    assert (code, err) == (1, "")
    assert as_json(out) == {
        "ok": False, "error": "task_not_found", "task": "Z", "message": "任务不存在，不能视为已启动。",
    }  # fmt: skip


def test_the_foreground_scripts_at_and_before_the_progress_deadline():
    set_a()
    code, out, _ = cli("check_foreground_progress.py", "--task", "A", now=at(minutes=2))
    assert (code, as_json(out)["reason"]) == (0, "within_window")
    code, out, _ = cli("check_foreground_progress.py", "--task", "A", now=at(minutes=3))
    assert (code, as_json(out)["reason"]) == (1, "progress_due (3m)")
    code, out, _ = cli("build_progress_update.py", "--task", "A")
    assert code == 0 and as_json(out)["message"] == (
        "长任务进度提醒：A\n当前状态：executing\n正在看：读取迁移日志\n刚确认：确认表结构\n"
        "下一步：继续沿当前链路推进，并在 30m 前给出新的阶段结论。"
    )
    code, out, _ = cli("foreground_tick.py", "--task", "A", now=at(minutes=3))
    assert (code, as_json(out)["due"], as_json(out)["sessionKey"]) == (1, True, K)
    code, out, _ = cli("work_cycle_tick.py", "--task", "A", "--step", "读完日志", now=at(minutes=3))
    tick = as_json(out)
    assert (code, tick["must_send_now"], tick["step"]) == (1, True, "读完日志")
    assert out == printed(
        selectors.work_cycle_tick(name="A", step="读完日志", now=at(minutes=3)).body
    )


def test_the_foreground_event_scripts_only_describe_what_is_due():
    set_a()
    code, out, _ = cli("emit_foreground_due.py", now=at(minutes=4))
    emitted = as_json(out)
    assert (code, emitted["event_count"], emitted["events"][0]["task"]) == (1, 1, "A")
    code, out, _ = cli("dispatch_foreground_due.py", "--unknown-cooldown-minutes", "5",
                       now=at(minutes=4))  # fmt: skip
    assert (code, as_json(out)["dispatch_count"]) == (1, 1)
    # With a stale window shorter than the silence the task is a recovery, not a heartbeat.
    code, out, _ = cli("emit_foreground_due.py", "--stale-minutes", "3", now=at(minutes=4))
    assert (code, as_json(out)["event_count"]) == (0, 0)
    assert not TaskEvent.objects.filter(kind="queued").exists()  # generated, not sent


def test_the_keepalive_scripts_and_their_idle_threshold():
    set_a()
    code, out, _ = cli("keepalive_tick.py", "--task", "A", now=at(seconds=61))
    assert (code, as_json(out)["should_resume"], as_json(out)["idle_for_seconds"]) == (1, True, 61)
    code, out, _ = cli("keepalive_tick.py", "--task", "A", "--idle-seconds", "90", now=at(seconds=61))
    assert (code, as_json(out)["reason"], as_json(out)["idle_seconds_threshold"]) == (
        0, "still_active", 90,
    )
    code, out, _ = cli("emit_keepalive_resume.py", "--task", "A", now=at(seconds=61))
    assert (code, as_json(out)["event_count"]) == (1, 1)
    code, out, _ = cli("run_keepalive_once.py", now=at(seconds=61))
    run_once = as_json(out)
    assert (code, run_once["dispatch_count"], run_once["dispatches"][0]["status"]) == (
        0, 1, "planned",
    )


# --- watchdog and recovery ----------------------------------------------------------------------


def _due_and_progress():
    """B is stale (analyzing, 11 minutes without an update), A owes a heartbeat."""
    task_set("B", state="analyzing", key=K2, next_check="等CI", now=at(minutes=-11))
    set_a(now=at(minutes=-4))


def test_watchdog_check_as_json_and_as_text():
    _due_and_progress()
    code, out, _ = cli("watchdog.py", "check", "--json")
    assert code == 1 and out == printed(selectors.watchdog_check(now=T0).body)
    code, out, err = cli("watchdog.py", "check")
    assert (code, err) == (1, "")
    assert out == (
        "watchdog: tasks needing follow-up\n"
        "- B | analyzing | 迁移会话 | stale_update (10m)\n"
        "  goal: 确认表结构\n"
        "  note: 读取迁移日志\n"
        "  next: 等CI | updated: 2026-04-02T11:49:00+08:00\n"
        "watchdog: tasks needing visible progress update\n"
        "- A | executing | 迁移会话 | progress_due (3m)\n"
        "  goal: 确认表结构\n"
        "  note: 读取迁移日志\n"
        "  progress_every: 3m | last_progress: 2026-04-02T11:56:00+08:00\n"
    )
    code, out, _ = cli("watchdog.py", "check", "--stale-minutes", "12")
    assert code == 1 and "follow-up" not in out
    LongTask.objects.all().delete()
    assert cli("watchdog.py", "check") == (
        0, "watchdog: all tracked tasks are within expected window\n", "",
    )  # fmt: skip


def test_a_task_the_watchdog_cannot_handle_is_listed_and_the_rest_reported():
    _due_and_progress()
    LongTask.objects.filter(name="B").update(origin_session_key="")  # as a hand-edited store
    code, out, _ = cli("watchdog.py", "check")
    assert code == 1
    assert out.endswith(
        "watchdog: tasks that could not be checked\n"
        "- B | missing origin_session_key for task: B\n"
    )
    assert "- A | executing" in out
    LongTask.objects.filter(name="A").delete()
    # Only the task it could not handle: no "all is well" line above it.
    error = "- B | missing origin_session_key for task: B\n"
    assert cli("watchdog.py", "check") == (
        1, "watchdog: tasks that could not be checked\n" + error, "",
    )  # fmt: skip
    assert cli("recover_due_tasks.py") == (
        1, "recover: tasks that could not be checked\n" + error, "",
    )  # fmt: skip
    assert cli("emit_recovery_message.py") == (
        1, "emit: tasks that could not be checked\n" + error, "",
    )  # fmt: skip


def test_recover_due_tasks_as_json_and_as_text():
    _due_and_progress()
    code, out, _ = cli("recover_due_tasks.py", "--json")
    assert code == 1 and out == printed(selectors.recovery_report(now=T0).body)
    code, out, _ = cli("recover_due_tasks.py")
    assert code == 1
    lines = out.splitlines()
    assert lines[:4] == [
        "recover: 1 overdue task(s), 1 progress update(s)",
        "- task: B",
        "  kind: recovery",
        "  state/session: analyzing / 迁移会话",
    ]
    assert "  suggested action: force-decision" in lines
    assert f"  suggested sessionKey: {K2}" in lines
    LongTask.objects.all().delete()
    assert cli("recover_due_tasks.py") == (0, "recover: no overdue tasks\n", "")


def test_emit_recovery_message_as_json_and_as_text():
    _due_and_progress()
    code, out, _ = cli("emit_recovery_message.py", "--json")
    messages = as_json(out)["messages"]
    assert code == 1 and [m["task"] for m in messages] == ["B", "A"]
    code, out, _ = cli("emit_recovery_message.py")
    assert out == messages[0]["message"] + "\n\n" + "=" * 60 + "\n\n" + messages[1]["message"] + "\n"
    assert out.startswith("长任务回收提醒：B\n当前状态：analyzing\n所属边界：数据库\n")
    LongTask.objects.all().delete()
    assert cli("emit_recovery_message.py") == (0, "emit: no recovery messages to send\n", "")


def test_build_sessions_send_payloads_and_run_watchdog_once():
    _due_and_progress()
    code, out, _ = cli("build_sessions_send_payloads.py", "--json")
    assert code == 1 and [p["kind"] for p in as_json(out)["payloads"]] == ["recovery", "progress"]
    code, out, _ = cli("run_watchdog_once.py")
    sent = as_json(out)
    assert (code, sent["due_count"], sent["progress_count"]) == (1, 1, 1)
    assert {p["status"] for p in sent["payloads"]} == {"queued"}
    # The second run in the same window queues nothing new (D-B20).
    code, out, _ = cli("run_watchdog_once.py")
    assert {p["status"] for p in as_json(out)["payloads"]} == {"already_queued", "in_flight"}


def test_cleanup_state_reports_and_applies():
    set_a()
    task_set("回归-1", state="done", key=K2)
    task_set("tmp-1", state="done", key=K2)
    code, out, _ = cli("cleanup_state.py", "--drop-test-prefix", "tmp-")
    report = as_json(out)
    assert (code, report["apply"], report["task_count_after"]) == (0, False, 1)
    assert [d["task"] for d in report["dropped"]] == ["回归-1", "tmp-1"]
    assert LongTask.objects.count() == 3
    code, out, _ = cli("cleanup_state.py", "--apply", "--drop-task", "A")
    assert (code, as_json(out)["task_count_after"]) == (0, 1)
    assert list(LongTask.objects.values_list("name", flat=True)) == ["tmp-1"]


# --- the shell helpers --------------------------------------------------------------------------


def test_install_watchdog_cron_prints_the_entry_and_installs_nothing(monkeypatch, tmp_path):
    monkeypatch.setenv("LOG_FILE", str(tmp_path / "watchdog log.txt"))
    monkeypatch.setenv("XWORKMATE_CONFIG", "/etc/xworkmate.toml")
    monkeypatch.delenv("XWORKMATE_HOME")
    code, out, _ = cli("install_watchdog_cron.sh", "10")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 4
    assert lines[0] == "# 建议添加到 crontab 的条目（每 10 分钟跑一次兜底回收）"
    assert all(line.startswith("# ") for line in lines[:3])
    assert lines[3].startswith("*/10 * * * * XWORKMATE_CONFIG=/etc/xworkmate.toml /")
    assert lines[3].endswith(
        f"/xworkmate-longrun run_watchdog_once >> '{tmp_path}/watchdog log.txt' 2>&1"
    )
    assert cli("install_watchdog_cron.sh")[1].splitlines()[3].startswith("*/5 * * * * ")
    assert cli("install_watchdog_cron.sh", "0")[0] == 2


def test_watchdog_loop_refuses_a_bad_interval(monkeypatch):
    monkeypatch.setenv("INTERVAL_SECONDS", "soon")
    assert cli("watchdog_loop.sh") == (
        2, "", "invalid INTERVAL_SECONDS: invalid int value: 'soon'\n",
    )  # fmt: skip


# --- beside the scripts -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "key", "code", "mode", "reason"),
    [
        ("进入长任务模式，帮我迁移数据库", "", 1, "enter",
         "the message asks for long-run mode (进入长任务模式): announce, set, then validate"),
        ("长任务模式", K2, 1, "enter",
         "the message asks for long-run mode (长任务模式): announce, set, then validate"),
        ("继续", K, 1, "continue",
         "no trigger phrase; the session has the active long task A (executing): go on with "
         "it, running work_cycle_tick first"),
        ("不要进入长任务模式", K2, 0, "ordinary",
         "the message mentions 进入长任务模式 without asking for it (a negation or a question), "
         "and no active long task in this session: an ordinary message"),
        ("什么是长任务模式？", K, 1, "continue",
         "the message mentions 长任务模式 without asking for it (a negation or a question); the "
         "session has the active long task A (executing): go on with it, running "
         "work_cycle_tick first"),
        ("一直做，不停", "", 0, "ordinary",
         "no trigger phrase, and no active long task in a session (no session key given): an "
         "ordinary message"),
    ],
)  # fmt: skip
def test_detect_trigger(message, key, code, mode, reason):
    set_a()
    task_set("W", state="done", key=K2)  # a finished task holds no session
    args = ["detect-trigger", "--message", message] + (["--session-key", key] if key else [])
    got, out, _ = cli(*args)
    body = as_json(out)
    assert (got, body["mode"], body["reason"]) == (code, mode, reason)
    assert body["trigger"] is (mode == "enter")
    assert body["active_task"] == ("A" if key == K else None)


def test_detect_trigger_warns_that_the_session_is_taken():
    set_a()
    _, out, _ = cli("detect-trigger", "--message", "进入长任务模式", "--session-key", K)
    assert as_json(out)["reason"].endswith(
        "; the session's lock is held by the active task A: registering another task needs "
        "--force-lock (else exit 3)"
    )


def test_import_and_export_state(tmp_path, monkeypatch):
    code, out, _ = cli("import-state", str(FIXTURE))
    report = as_json(out)
    assert (code, report["source"], len(report["imported"])) == (1, str(FIXTURE), 6)
    code, exported, _ = cli("export-state")
    assert code == 0 and exported == printed(selectors.state_export().body)
    path = tmp_path / "export.json"
    path.write_text(exported, encoding="utf-8")
    code, out, _ = cli("import-state", str(path), "--replace")
    assert (code, as_json(out)["skipped"]) == (0, [])
    assert cli("export-state")[1] == exported
    monkeypatch.setattr("sys.stdin", io.StringIO(exported))
    code, out, _ = cli("import-state", "-", "--replace")
    assert (code, as_json(out)["source"]) == (0, "-")


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (None, "[Errno 2] No such file or directory: '{path}'"),
        ("", "Expecting value: line 1 column 1 (char 0)"),
        ("{not json", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
        ('{"tasks": 1}', "'tasks' must be an object of task records keyed by name"),
    ],
)
def test_import_refuses_a_file_it_cannot_read_and_changes_nothing(tmp_path, content, error):
    set_a()
    path = tmp_path / "state.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    assert cli("import-state", str(path), "--replace") == (
        1, "", f"failed to read state file: {error.format(path=path)}\n",
    )  # fmt: skip
    assert list(LongTask.objects.values_list("name", flat=True)) == ["A"]


# --- issue 23 B: the scripts' last differences, each matched or decided -------------------------


def test_acquire_lock_on_a_task_not_in_the_store_is_task_not_found_d_b28():
    # The original locked any name; here a lock names a task of the store (D-B28).
    assert cli("task_state.py", "acquire-lock", "--session", K, "--task", "nobody") == (
        1, "", "task not found: nobody\n",
    )  # fmt: skip
    assert cli("task_state.py", "locks") == (0, "{}\n", "")
    # A lock another task holds answers first, as the original's did: exit 3.
    set_a()
    code, out, err = cli("task_state.py", "acquire-lock", "--session", K, "--task", "nobody")
    assert (code, out, as_json(err)["requested_task"]) == (3, "", "nobody")
    assert cli("task_state.py", "locks") == (0, printed({K: "A"}), "")


def test_cleanup_drops_a_lock_whose_holder_has_no_session_key_as_the_original():
    task_set("C", state="blocked", key=None)
    cli("task_state.py", "acquire-lock", "--session", K2, "--task", "C")
    report = {
        "normalized": [],
        "dropped": [],
        "archived": [],
        "lock_repairs": [
            {
                "session_key": K2,
                "task": "C",
                "action": "replace_with_task_origin_session_key",
                "new_session_key": None,
            }
        ],
        "task_count_before": 1,
        "task_count_after": 1,
        "lock_count_before": 1,
        "lock_count_after": 0,
        "apply": False,
    }
    assert cli("cleanup_state.py") == (0, printed(report), "")
    assert cli("task_state.py", "locks") == (0, printed({K2: "C"}), "")  # a dry run
    assert cli("cleanup_state.py", "--apply") == (0, printed(report | {"apply": True}), "")
    assert cli("task_state.py", "locks") == (0, "{}\n", "")
    assert list(LongTask.objects.values_list("name", "state")) == [("C", "blocked")]


def test_lock_repairs_and_the_lock_table_keep_the_order_the_locks_were_taken():
    # Taken in the order z, a, m: not the keys' sorted order.
    for name, key in (("回归-z", "agent:main:z"), ("回归-a", "agent:main:a"), ("M", "agent:main:m")):
        task_set(name, key=key)
    assert cli("task_state.py", "locks") == (
        0, printed({"agent:main:z": "回归-z", "agent:main:a": "回归-a", "agent:main:m": "M"}), "",
    )  # fmt: skip
    cli("task_state.py", "release-lock", "--session", "agent:main:m")
    code, out, _ = cli("cleanup_state.py")
    assert code == 0 and as_json(out)["lock_repairs"] == [
        {"session_key": "agent:main:z", "old_task": "回归-z", "action": "drop_orphan_lock"},
        {"session_key": "agent:main:a", "old_task": "回归-a", "action": "drop_orphan_lock"},
        {"session_key": "agent:main:m", "task": "M", "action": "restore_missing_lock"},
    ]


def test_release_lock_without_a_task_prints_task_null_as_the_original():
    set_a()
    assert cli("task_state.py", "release-lock", "--session", K) == (
        0, printed({"ok": True, "origin_session_key": K, "task": None}), "",
    )  # fmt: skip
    assert cli("task_state.py", "release-lock", "--session", K) == (
        1, printed({"ok": False, "origin_session_key": K, "task": None}), "",
    )  # fmt: skip
    cli("task_state.py", "acquire-lock", "--session", K, "--task", "A")
    assert cli("task_state.py", "release-lock", "--session", K, "--task", "A") == (
        0, printed({"ok": True, "origin_session_key": K, "task": "A"}), "",
    )  # fmt: skip


@pytest.mark.parametrize(("state", "key"), [("waiting", K), ("blocked", None), ("done", K)])
def test_foreground_tick_on_a_task_owing_no_progress_answers_as_the_original(state, key):
    task_set(state=state, key=key)
    assert cli("foreground_tick.py", "--task", "A") == (
        0,
        printed(
            {
                "task": "A",
                "due": False,
                "check": {"task": "A", "due": False, "reason": f"state={state}"},
                "message": None,
                "delivery": "session",
                "sessionKey": None,
                "session_label": None,
                "state": None,
            }
        ),
        "",
    )
