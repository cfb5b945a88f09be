"""The schedule-plan skill (plans/skill/): its wrapper script against a live server, and SKILL.md.

The wrapper runs as the agent runs it: a subprocess with only XWORKMATE_URL and
XWORKMATE_API_KEY set, under `python -I -S` (the standard library alone) and a
C locale (its output is UTF-8 all the same). Each run of the conversation has
its own agent key (KeyBinding), as the bridge gives it, so the key is the turn.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from plans.models import Confirmation, Job
from tests.conftest import ROOT, SkillRun, configure, free_port, run_skill_script
from xworkmate.services import KeyBinding, api_key_create

SKILL_DIR = ROOT / "plans" / "skill"
SCRIPT = SKILL_DIR / "scripts" / "plan.py"
SKILL_MD = SKILL_DIR / "SKILL.md"

SESSION = "agent:ops:user:u-1:direct:chat-1"
FIRST_INSTRUCTION = "从路径 archives/chat-1/PLAN.md 中读取 Task_ID: {task} 的详细计划并按步骤执行"
PROPOSAL = [
    "--task-name",
    "每日库存巡检日报",
    "--persona",
    "库存管理助理",
    "--objective",
    "每天发现库存异常，体现 SOUL.md 的主动负责",
    "--result",
    "每天 9 点前生成 report.md 并归档",
    "--step",
    "每天 09:00 读取库存表，列出低于安全库存的 SKU",
    "--step",
    "生成 report.md；失败时记录原因并重试一次",
]
DAILY_9 = ["--cron", "0 9 * * *", "--tz", "Asia/Shanghai"]

# The rule headings of the original schedule-plan v1.0.0, verbatim.
ORIGINAL_HEADINGS = [
    "【先确认 PLAN，再创建定时任务】",
    "【已创建计划的修改】",
    "【需求理解规则】",
    "【ORA 拆解】",
    "【任务消息首要指令】",
    "【PLAN.md 持久化】",
    "【Cron】",
    "【PLAN.md 模板】",
    "【执行顺序（计划任务）】",
]


def run_plan(url: str, key: str, *args: str, stdin: str | None = None) -> SkillRun:
    return run_skill_script(SCRIPT, url, key, *args, stdin=stdin)


def _error(result: SkillRun) -> dict[str, str]:
    """The error of a refused call: exit 1 and a body with only `error`."""
    assert result.code == 1, result
    body = result.json
    assert set(body) == {"error"}, body
    return dict(body["error"])


def agent_key(run: str, session: str = SESSION) -> str:
    """The key the bridge gives one run of the session: it speaks for that run only."""
    _, token = api_key_create(
        name=f"agent-{run}",
        scopes=["plans:write"],
        binding=KeyBinding(session_key=session, run_id=run),
    )
    return token


@pytest.fixture
def workspace(settings: Any, tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    configure(settings, "plans", workspace=str(root))
    return root


# --- against a live server ----------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_propose_then_confirm_in_the_next_run_then_export_and_runs(live_server, workspace):
    url = live_server.url
    run_1 = agent_key("run-1")

    proposed = run_plan(url, run_1, "propose", *PROPOSAL, *DAILY_9)
    assert proposed.code == 0, proposed
    plan = proposed.json["plan"]
    task = plan["taskId"]
    assert plan["state"] == "AWAITING_PLAN_CONFIRMATION" and plan["awaitingConfirmation"]
    assert plan["revision"]["number"] == 1 and plan["revision"]["turnId"] == "run-1"
    assert plan["planPath"] == "archives/chat-1/PLAN.md" and plan["sessionKey"] == SESSION
    assert plan["reviewUrl"].startswith(f"{url}/admin/plans/entry/")
    plan_md = workspace / "archives" / "chat-1" / "PLAN.md"
    assert f"Task_ID: {task}" in plan_md.read_text(encoding="utf-8")
    # The Chinese comes through as text, not \u escapes, in a C locale too.
    assert "每日库存巡检日报" in proposed.stdout

    shown = run_plan(url, run_1, "show", task)
    assert shown.code == 0 and shown.json["plan"]["taskId"] == task
    assert shown.json["plan"]["revision"]["number"] == 1
    content = run_plan(url, run_1, "content", task)
    assert content.code == 0 and content.json == {"content": plan_md.read_text(encoding="utf-8")}
    raw = run_plan(url, run_1, "content", task, "--raw")
    assert raw.code == 0 and raw.stdout == plan_md.read_text(encoding="utf-8")

    # Nothing is scheduled before a confirmation, so nothing exports.
    assert _error(run_plan(url, run_1, "export", task))["message"].startswith("D-C9:")
    # The run that wrote PLAN.md never confirms it (F1), whatever the user said.
    refused = run_plan(url, run_1, "confirm", task, "--revision", "1", "--message", "确认")
    assert _error(refused)["code"] == "REFUSED"
    assert _error(refused)["message"].startswith("F1:")
    assert not Job.objects.exists()

    # The user's next message arrives in the next run; the agent relays it verbatim.
    run_2 = agent_key("run-2")
    confirmed = run_plan(
        url, run_2, "confirm", task, "--revision", "1", "--message-file", "-", stdin="确认\n"
    )
    assert confirmed.code == 0, confirmed
    plan = confirmed.json["plan"]
    assert plan["state"] == "SCHEDULED" and plan["confirmedRevision"] == 1
    assert (plan["job"]["sessionTarget"], plan["job"]["payload"]["kind"]) == (
        "isolated",
        "agentTurn",
    )
    confirmation = Confirmation.objects.get()
    assert (confirmation.turn_id, confirmation.message) == ("run-2", "确认")

    exported = run_plan(url, run_2, "export", task)
    assert exported.code == 0, exported
    request = exported.json["request"]
    assert request["schedule"] == {"kind": "cron", "expr": "0 9 * * *", "tz": "Asia/Shanghai"}
    assert request["payload"] == {
        "kind": "agentTurn",
        "message": FIRST_INSTRUCTION.format(task=task),
    }
    assert request["sessionTarget"] == "isolated" and request["sessionKey"] == SESSION

    runs = run_plan(url, run_2, "runs", task)
    assert runs.code == 0 and runs.json["entries"] == [] and runs.json["total"] == 0
    assert run_plan(url, run_2, "run", task, "--mode", "due").json == {
        "ok": True,
        "ran": False,
        "reason": "not-due",
    }
    assert run_plan(url, run_2, "run", task).json == {"ok": True, "ran": True}
    [entry] = run_plan(url, run_2, "runs", task, "--limit", "5").json["entries"]
    assert entry["forced"] is True

    listed = run_plan(url, run_2, "list", "--limit", "10")
    assert listed.code == 0 and [p["taskId"] for p in listed.json["plans"]] == [task]


@pytest.mark.django_db(transaction=True)
def test_a_change_request_then_revise_then_confirm_pause_resume_cancel(live_server, workspace):
    url = live_server.url
    task = run_plan(url, agent_key("run-1"), "propose", *PROPOSAL, *DAILY_9).json["plan"]["taskId"]

    run_2 = agent_key("run-2")
    # "好的，不过…" is a change request, never a confirmation (§2.4).
    not_yes = run_plan(
        url, run_2, "confirm", task, "--revision", "1", "--message", "好的，不过把时间改成8点"
    )
    assert _error(not_yes)["message"].startswith("§2.4:")
    changes = run_plan(
        url,
        run_2,
        "request-changes",
        task,
        "--revision",
        "1",
        "--message",
        "好的，不过把时间改成8点",
    )
    assert changes.code == 0 and changes.json["plan"]["state"] == "REVISING"
    revised = run_plan(
        url,
        run_2,
        "revise",
        task,
        "--result",
        "每天 8 点前生成 report.md 并归档",
        "--cron",
        "0 8 * * *",
        "--tz",
        "Asia/Shanghai",
    )
    assert revised.code == 0, revised
    assert revised.json["plan"]["revision"]["number"] == 2
    assert "每天 8 点前" in (workspace / "archives/chat-1/PLAN.md").read_text(encoding="utf-8")
    # The run that wrote revision 2 does not confirm it either.
    again = run_plan(url, run_2, "confirm", task, "--revision", "2", "--message", "确认")
    assert _error(again)["message"].startswith("F1:")

    run_3 = agent_key("run-3")
    stale = run_plan(url, run_3, "confirm", task, "--revision", "1", "--message", "确认")
    assert _error(stale)["message"].startswith("D-C3:")
    yes = run_plan(url, run_3, "confirm", task, "--revision", "2", "--message", "按这个建 Cron")
    assert yes.code == 0, yes
    assert yes.json["plan"]["job"]["schedule"]["expr"] == "0 8 * * *"

    paused = run_plan(url, run_3, "pause", task).json["plan"]
    assert paused["state"] == "PAUSED" and paused["displayStatus"]["label"] == "已暂停"
    assert run_plan(url, run_3, "resume", task).json["plan"]["state"] == "SCHEDULED"
    cancelled = run_plan(url, run_3, "cancel", task)
    assert cancelled.code == 0 and cancelled.json["plan"]["state"] == "REMOVED"
    assert "- **Status**: Cancelled" in (workspace / "archives/chat-1/PLAN.md").read_text(
        encoding="utf-8"
    )


@pytest.mark.django_db(transaction=True)
def test_the_clarification_check_fails_and_passes(live_server):
    key = agent_key("run-1")
    vague = run_plan(live_server.url, key, "check-reply", "--reply", "你想怎么做？")
    assert vague.code == 1 and vague.json["ok"] is False and len(vague.json["problems"]) == 3
    good = "预设基准方案：每天 9 点生成库存日报。\nA. 每天 9 点\nB. 工作日 8:30\nC. 每周一 9 点\n其他：[由用户补充]\n"
    checked = run_plan(live_server.url, key, "check-reply", "--reply-file", "-", stdin=good)
    assert checked.code == 0, checked
    assert checked.json == {"ok": True, "problems": []}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("schedule", "rule"),
    [
        (["--cron", "0 9 * *"], "schedule"),
        (["--every", "5ms"], "schedule.everyMs"),
        (["--at", "2020-01-01T09:00:00+08:00"], "schedule.at is in the past"),
    ],
)
def test_a_bad_schedule_is_refused_naming_the_rule(live_server, workspace, schedule, rule):
    refused = run_plan(live_server.url, agent_key("run-1"), "propose", *PROPOSAL, *schedule)
    error = _error(refused)
    assert error["code"] == "INVALID_REQUEST" and rule in error["message"], error
    assert not (workspace / "archives").exists()


@pytest.mark.django_db(transaction=True)
def test_the_run_policies_travel_with_the_proposal_and_a_bad_one_is_refused(
    live_server, workspace
):
    # D-C23, D-C24: the skill's options reach the plan; a missing lateness is refused.
    proposed = run_plan(live_server.url, agent_key("run-1"), "propose", *PROPOSAL, *DAILY_9,
                        "--missed", "run-all", "--max-lateness", "3600", "--overlap", "buffer")
    assert proposed.code == 0, proposed
    plan = proposed.json["plan"]
    assert (plan["missed"], plan["maxLatenessSeconds"], plan["overlap"]) == (
        "run-all", 3600, "buffer")
    refused = run_plan(live_server.url, agent_key("run-2"), "propose", *PROPOSAL, *DAILY_9,
                       "--missed", "run-all")
    assert _error(refused)["message"].startswith(
        'maxLatenessSeconds: required with missed "run-all"')


@pytest.mark.django_db(transaction=True)
def test_a_blocked_write_is_relayed_as_the_archive_receipt(live_server, workspace):
    # The bridge's own key names the session; one without an ARCHIVE_ID is BLOCKED.
    _, bridge = api_key_create(name="bridge", scopes=["plans:write"])
    blocked = run_plan(
        live_server.url,
        bridge,
        "propose",
        *PROPOSAL,
        *DAILY_9,
        "--session-key",
        "unknown",
        "--turn-id",
        "turn-1",
    )
    assert _error(blocked)["code"] == "BLOCKED"
    assert blocked.stderr.startswith("ARCHIVE_STATUS: BLOCKED\nARCHIVE_REASON: ")
    assert not (workspace / "archives").exists()


# --- without a server ---------------------------------------------------------------------------


def test_an_unreachable_server_exits_3():
    answer = run_plan(f"http://127.0.0.1:{free_port()}", "xwm_any", "list")
    assert answer.code == 3, answer
    assert answer.json["error"]["code"] == "UNREACHABLE"


@pytest.mark.parametrize(
    ("url", "key", "args", "says"),
    [
        ("", "k", ["list"], "XWORKMATE_URL is not set"),
        ("http://127.0.0.1:1", "", ["list"], "XWORKMATE_API_KEY is not set"),
        ("file:///etc", "k", ["list"], "http(s) URL"),
        ("http://127.0.0.1:1", "k", ["show", "../../admin"], "not a Task_ID"),
        ("http://127.0.0.1:1", "k", ["propose", *PROPOSAL], "one of the arguments --cron"),
        ("http://127.0.0.1:1", "k", ["propose", *PROPOSAL, "--every", "soon"], "not a duration"),
        ("http://127.0.0.1:1", "k", ["propose", *PROPOSAL, "--at", "x", "--tz", "UTC"], "--tz"),
        (
            "http://127.0.0.1:1",
            "k",
            ["revise", "7f3c9a2e-1b4d-4c8e-9f10-2a3b4c5d6e7f"],
            "at least one field",
        ),
        (
            "http://127.0.0.1:1",
            "k",
            ["confirm", "7f3c9a2e-1b4d-4c8e-9f10-2a3b4c5d6e7f", "--message", "确认"],
            "--revision",
        ),
    ],
)
def test_usage_errors_exit_2(url, key, args, says):
    answer = run_plan(url, key, *args)
    assert answer.code == 2 and says in answer.stderr, answer
    assert answer.stdout == ""


# --- SKILL.md -----------------------------------------------------------------------------------


def _front_matter(text: str) -> dict[str, str]:
    match = re.match(r"^---\n(.*?)\n---\n", text, re.S)
    assert match, "SKILL.md starts with a front matter"
    fields: dict[str, str] = {}
    for line in match[1].splitlines():
        # OpenClaw's parser reads single-line keys only.
        name, _, value = line.partition(":")
        assert name and not name.startswith(" ") and value.startswith(" "), line
        fields[name] = value.strip()
    return fields


def _subcommands() -> set[str]:
    # `plan.py --help` lists each subcommand on a line of its own, indented by four.
    usage = run_plan("", "", "--help").stdout
    return set(re.findall(r"^    ([a-z][a-z-]+)", usage, re.M))


def test_skill_md_front_matter_is_the_originals_style():
    fields = _front_matter(SKILL_MD.read_text(encoding="utf-8"))
    assert fields["name"] == "schedule-plan"
    assert re.fullmatch(r'"\d+\.\d+\.\d+"', fields["version"])
    assert "定时计划" in fields["description"] and "PLAN.md" in fields["description"]
    metadata = json.loads(fields["metadata"])
    assert "openclaw" in metadata


def test_skill_md_keeps_every_rule_of_the_original():
    text = SKILL_MD.read_text(encoding="utf-8")
    for heading in ORIGINAL_HEADINGS:
        assert heading in text, heading
    for rule in [
        "其他：[由用户补充]",
        "是否确认按此执行、是否有修改意见",
        "「确认」「可以创建定时任务了」「按这个建 Cron」",
        "从路径 archives/{ARCHIVE_ID}/PLAN.md 中读取 Task_ID: {{TASK_UUID}} 的详细计划并按步骤执行",
        '`sessionTarget` 必须是 "isolated"',
        '`payload.kind` 必须是 "agentTurn"',
        "Task_ID, Role_Context, Archive_Path, Status, Objective, Result, Action_Steps",
        "ARCHIVE_STATUS: BLOCKED",
        "archive-protocol",
        "XWORKMATE_URL",
        "XWORKMATE_API_KEY",
        "skills/schedule-plan/",
        "reviewUrl",
    ]:
        assert rule in text, rule


def test_skill_md_uses_only_real_subcommands_and_options_and_names_them_all():
    text = SKILL_MD.read_text(encoding="utf-8")
    subcommands = _subcommands()
    assert {"propose", "confirm", "check-reply", "export"} <= subcommands
    used = set(re.findall(r"plan\.py ([a-z][a-z-]*)", text))
    assert used - subcommands == set(), "SKILL.md names a subcommand plan.py does not have"
    assert subcommands - used == set(), "SKILL.md does not tell the agent about these"
    # Every option a command line of SKILL.md passes is one that subcommand takes.
    for line in re.findall(r"plan\.py ([a-z][a-z-]*[^\n`]*)", text):
        command, *rest = line.split()
        options = {word.split("=")[0] for word in rest if word.startswith("--")}
        if not options:
            continue
        usage = run_plan("", "", command, "--help").stdout
        for option in options:
            assert re.search(rf"{re.escape(option)}\b", usage), (command, option)


def test_the_skill_ships_with_the_package():
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^"plans" = \[.*"skill/\*\.md".*\]$', pyproject, re.M)
    assert os.access(SCRIPT, os.X_OK)
    assert SCRIPT.read_text(encoding="utf-8").startswith("#!/usr/bin/env python3\n")
    # The standard library only: no import of the project or a third-party package.
    imports = re.findall(r"^(?:from|import) ([a-z_]+)", SCRIPT.read_text(encoding="utf-8"), re.M)
    assert "urllib" in imports
    assert set(imports) <= set(sys.stdlib_module_names) | {"__future__"}, imports
