"""The long-run-mode skill (longrun/skill/): its wrapper scripts against a live server, and SKILL.md.

The scripts run as the agent runs them: subprocesses with only XWORKMATE_URL
and XWORKMATE_API_KEY set, under `python -E -s -S` (no site-packages, no PYTHON*
variables; the script's own directory first on the path, as for `python3 x.py`) and
a C locale. The agent's key is bound to its session, as the bridge gives it.
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from longrun import cli
from longrun.models import LongTask, TaskEvent
from tests.conftest import ROOT, SkillRun, free_port, run_skill_script
from xworkmate.services import KeyBinding, api_key_create

SKILL_DIR = ROOT / "longrun" / "skill"
SCRIPTS = SKILL_DIR / "scripts"
SKILL_MD = SKILL_DIR / "SKILL.md"
K = "agent:main:telegram:dm:1001"
K2 = "agent:main:main"
# The original package's scripts (§0.2) that an agent or the bridge runs; the two
# shell helpers are Celery beat's jobs here.
ORIGINAL_SCRIPTS = {
    "task_state", "validate_task_start", "check_foreground_progress", "build_progress_update",
    "foreground_tick", "work_cycle_tick", "emit_foreground_due", "dispatch_foreground_due",
    "keepalive_tick", "emit_keepalive_resume", "run_keepalive_once", "watchdog",
    "run_watchdog_once", "recover_due_tasks", "emit_recovery_message",
    "build_sessions_send_payloads", "cleanup_state",
}
SET_ARGS = [
    "set", "--task", "迁移数据库", "--session", "迁移会话", "--origin-session-key", K,
    "--state", "executing", "--goal", "确认表结构", "--done-when", "迁移完成",
    "--blocked-when", "缺权限", "--boundary", "数据库", "--next-check", "10m",
    "--note", "读取迁移日志", "--progress-every", "3m",
]


def script(url: str, key: str, name: str, *args: str) -> SkillRun:
    # Not -I: the wrappers import their sibling _xworkmate module.
    return run_skill_script(SCRIPTS / f"{name}.py", url, key, *args, isolated=False)


def agent_key(session: str = K, name: str = "agent") -> str:
    _, token = api_key_create(
        name=name, scopes=["longrun:write"], binding=KeyBinding(session_key=session, run_id="r-1")
    )
    return token


# --- against a live server -----------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_agents_flow_register_validate_work_cycle_progress(live_server):
    url, key = live_server.url, agent_key()
    registered = script(url, key, "task_state", *SET_ARGS)
    assert registered.code == 0, registered
    assert registered.stdout.startswith('{\n  "task": "迁移数据库",\n')  # indent=2, Chinese kept
    assert registered.json["origin_session_key"] == K

    validated = script(url, key, "validate_task_start", "--task", "迁移数据库",
                       "--expect-session-key", K)
    assert validated.code == 0, validated
    assert validated.json["ok"] is True
    assert validated.json["message"] == "启动校验通过：任务已绑定到真实目标会话。"

    cycle = script(url, key, "work_cycle_tick", "--task", "迁移数据库", "--step", "读完了日志")
    assert cycle.code == 0, cycle
    assert cycle.json["must_send_now"] is False and cycle.json["step"] == "读完了日志"
    assert cycle.json["instruction"] == (
        "本轮无需汇报，直接继续下一轮；下一轮结束后再次运行 work_cycle_tick.py。"
    )

    touched = script(url, key, "task_state", "touch-progress", "--task", "迁移数据库")
    assert touched.code == 0, touched
    assert touched.json["last_progress_delivery_status"] == "sent"
    failed = script(url, key, "task_state", "mark-progress-attempt", "--task", "迁移数据库",
                    "--error", "gateway 502")
    assert failed.code == 0 and failed.json["last_progress_send_error"] == "gateway 502"
    assert TaskEvent.objects.filter(task__name="迁移数据库").count() == 2

    update = script(url, key, "build_progress_update", "--task", "迁移数据库")
    assert update.json["message"].splitlines()[0] == "长任务进度提醒：迁移数据库"
    tick = script(url, key, "foreground_tick", "--task", "迁移数据库")
    assert (tick.code, tick.json["due"]) == (0, False)
    listed = script(url, key, "task_state", "list")
    assert listed.code == 0 and listed.stdout.startswith("- 迁移数据库 | executing | 迁移会话 |")
    assert script(url, key, "task_state", "locks").json == {K: "迁移数据库"}
    watchdog = script(url, key, "watchdog", "check")
    assert watchdog.stdout == "watchdog: all tracked tasks are within expected window\n"
    assert script(url, key, "watchdog", "check", "--json").json["ok"] == ["迁移数据库"]
    detected = script(url, key, "detect_trigger", "--message", "继续")
    assert detected.code == 1 and detected.json["mode"] == "continue"


@pytest.mark.django_db(transaction=True)
def test_refusals_print_the_originals_text_and_exit_with_its_code(live_server):
    url, key = live_server.url, agent_key()
    assert script(url, key, "task_state", *SET_ARGS).code == 0

    running = ["running" if arg == "executing" else arg for arg in SET_ARGS]
    invalid = script(url, key, "task_state", *running)
    assert (invalid.code, invalid.stdout, invalid.stderr) == (2, "", "invalid state: running\n")

    locked = script(url, key, "task_state", *[a if a != "迁移数据库" else "B" for a in SET_ARGS])
    assert locked.code == 3 and locked.stdout == ""
    assert json.loads(locked.stderr) == {
        "error": "session lock exists", "origin_session_key": K,
        "current_task": "迁移数据库", "requested_task": "B",
    }
    assert locked.stderr.startswith('{\n  "error": "session lock exists",')

    missing = script(url, key, "task_state", "show", "--task", "Z")
    assert (missing.code, missing.stderr) == (1, "task not found: Z\n")
    not_started = script(url, key, "validate_task_start", "--task", "Z")
    assert not_started.code == 1 and not_started.json["error"] == "task_not_found"
    mismatch = script(url, key, "validate_task_start", "--task", "迁移数据库",
                      "--expect-session-key", K2)
    assert mismatch.code == 2 and mismatch.json["errors"] == ["origin_session_key_mismatch"]

    # Another session's agent: the task is not there for it, and its own key is all it names.
    other = agent_key(K2, "other-agent")
    assert script(url, other, "task_state", "show", "--task", "迁移数据库").code == 1
    forbidden = script(url, other, "task_state", "acquire-lock", "--session", K, "--task", "X")
    assert forbidden.code == 2
    assert forbidden.stderr == "session: an agent key acts on its own session only\n"
    assert LongTask.objects.get().origin_session_key == K

    # release-lock without --task names none, as the original; with the session free, a
    # lock is refused to a name no task has (D-B28).
    released = script(url, key, "task_state", "release-lock", "--session", K)
    assert (released.code, released.stdout) == (
        0, json.dumps({"ok": True, "origin_session_key": K, "task": None}, indent=2) + "\n",
    )  # fmt: skip
    nobody = script(url, key, "task_state", "acquire-lock", "--session", K, "--task", "nobody")
    assert (nobody.code, nobody.stdout, nobody.stderr) == (1, "", "task not found: nobody\n")


@pytest.mark.django_db(transaction=True)
def test_the_bridges_runs_and_usage_errors(live_server):
    _, bridge = api_key_create(name="bridge", scopes=["longrun:write"])
    url = live_server.url
    run = script(url, bridge, "run_watchdog_once")
    assert run.code == 0 and run.json["payloads"] == []
    cleanup = script(url, bridge, "cleanup_state", "--drop-task", "x")
    assert cleanup.code == 0 and cleanup.json["apply"] is False
    recover = script(url, bridge, "recover_due_tasks")
    assert recover.stdout == "recover: no overdue tasks\n"
    emit = script(url, bridge, "emit_recovery_message")
    assert emit.stdout == "emit: no recovery messages to send\n"
    agent = script(url, agent_key(), "run_keepalive_once")
    assert agent.code == 2 and "a key bound to a session may not run it" in agent.stderr
    usage = script(url, bridge, "task_state", "set", "--task", "x")
    assert usage.code == 2 and "the following arguments are required" in usage.stderr


@pytest.mark.django_db(transaction=True)
def test_the_text_modes_print_what_the_command_line_prints(live_server):
    """watchdog / recover / emit without --json: the same lines as `manage.py longrun`."""
    _, bridge = api_key_create(name="bridge", scopes=["longrun:write"])
    assert script(live_server.url, bridge, "task_state", *SET_ARGS).code == 0
    keyless = [arg.replace("迁移数据库", "无键任务") for arg in SET_ARGS[:5] + SET_ARGS[7:]]
    assert script(live_server.url, bridge, "task_state", *keyless, "--origin-session-key", K2).code == 0
    # An active task without a key is an error item of the reports (D-B5).
    LongTask.objects.filter(name="无键任务").update(origin_session_key="")
    with time_machine.travel(timezone.now() + timedelta(minutes=11), tick=False):
        for args in (["watchdog", "check"], ["recover_due_tasks"], ["emit_recovery_message"]):
            wrapper = script(live_server.url, bridge, *args)
            out, err = io.StringIO(), io.StringIO()
            code = cli.run(args, prog="longrun", stdout=out, stderr=err)
            assert (wrapper.code, wrapper.stdout) == (code, out.getvalue()), args
            assert "无键任务 | missing origin_session_key for task: 无键任务" in wrapper.stdout


def test_an_unset_or_unreachable_server_exits_5():
    unset = script("", "", "task_state", "list")
    assert unset.code == 5 and "XWORKMATE_URL" in unset.stderr and unset.stdout == ""
    down = script(f"http://127.0.0.1:{free_port()}", "k", "task_state", "list")
    assert down.code == 5 and down.stderr.startswith("xworkmate: cannot reach")


# --- SKILL.md and the folder ---------------------------------------------------------------------


def _front_matter(text: str) -> dict[str, str]:
    head = text.split("---\n", 2)[1]
    return dict(line.split(": ", 1) for line in head.strip().splitlines())


def test_the_folder_has_each_original_script_and_only_the_standard_library():
    names = {path.stem for path in SCRIPTS.glob("*.py") if not path.stem.startswith("_")}
    assert names == ORIGINAL_SCRIPTS | {"detect_trigger"}
    for path in SCRIPTS.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        imports = set(re.findall(r"^(?:from|import) ([a-z_]+)", text, re.M))
        assert imports <= set(sys.stdlib_module_names) | {"__future__", "_xworkmate", "_operations", "_render"}, path
        if not path.stem.startswith("_"):
            assert text.startswith("#!/usr/bin/env python3\n") and os.access(path, os.X_OK), path


def test_skill_md_front_matter():
    fields = _front_matter(SKILL_MD.read_text(encoding="utf-8"))
    assert fields["name"] == "long-run-mode"
    assert "进入长任务模式" in fields["description"] and "不要停下来问" in fields["description"]
    assert "openclaw" in json.loads(fields["metadata"])


def test_skill_md_keeps_every_rule_of_the_original():
    text = SKILL_MD.read_text(encoding="utf-8")
    for rule in [
        # §1 and §2
        "把这个技能当成**长任务执行协议**，不是普通提示词。",
        "1. 长任务不能悄悄空转",
        "2. 用户必须持续看得见任务还活着",
        "当用户明确说出 `长任务模式` 或 `进入长任务模式` 时，才触发长任务模式。",
        "`继续`、`接着来`、`往下做`、`一直做，不停`、`持续推进`、`不要停下来问`",
        "不要登记长任务状态、不要启动保活/看门狗、不要套用长任务前台心跳规则。",
        "但**开启动作本身**仍然只能由 `进入长任务模式` 触发。",
        # §3
        "当前状态：分析中 / 执行中 / 等待外部 / 被阻塞 / 需转派 / 已完成",
        "登记后必须立刻跑一次启动校验",
        "只有当校验返回 `ok: true` 时，才能对用户说“已进入长任务模式”或“已开启长任务模式”。",
        "必须提供真实 `--origin-session-key`",
        "`session` 只是人类可读名字；真正的发送、保活、恢复都靠 `origin_session_key`。",
        # §5
        "禁止模糊状态。",
        "前台可见进度是主路径，watchdog 只是兜底。",
        "若距上次可见进度已超 `3m`（或任务自己的 `progress_every`），必须先发一条短进度，不能先做别的。",
        "正在看什么 / 刚确认什么 / 下一步是什么",
        "只要返回 `must_send_now: true`，当前这一轮就**不得继续埋头做事**",
        "`openclaw manager / App / 控制 UI` → `openclaw-control-ui`",
        "进入 `waiting` 只能三选一",
        "连续 3 次工具失败",
        "卡在哪里 / 缺什么 / 建议下一步",
        "如果当前会话不该继续做，转 `handoff`，不要硬做。",
        # §8
        "已生成消息 / 已尝试发送 / 用户已真正收到",
        "必须记为 `unknown`，不能直接记成失败",
        # §14
        "15 分钟长任务里至少自动出现 2 次短进度",
        "发送失败时能看到失败时间与原因",
        "任务失联后能真正发回目标会话，而不是只生成 payload",
        "不要把“事件已生成”写成“消息已送达”",
        "不依赖任何固定机器路径或固定用户目录",
        # This server's own
        "XWORKMATE_URL",
        "XWORKMATE_API_KEY",
        "skills/long-run-mode/",
    ]:
        assert rule in text, rule


def test_skill_md_names_every_script_and_only_real_ones():
    text = SKILL_MD.read_text(encoding="utf-8")
    named = set(re.findall(r"scripts/([a-z_]+)\.py", text))
    scripts = {path.stem for path in SCRIPTS.glob("[a-z]*.py")}
    assert named == scripts
    for reference in re.findall(r"`(references/[a-z-]+\.md)`", text):
        assert (SKILL_DIR / reference).is_file(), reference


def test_the_skill_ships_with_the_package():
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^"longrun" = \[.*"skill/scripts/\*\.py".*\]$', pyproject, re.M)
