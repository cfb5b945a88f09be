"""The texts the original built, verbatim (§7.4, §7.9, §7.10), and D-B14's 未设置."""

from __future__ import annotations

import pytest

from longrun.policies.messages import (
    progress_message,
    recovery_suggestion,
    recovery_text,
    resume_message,
)
from tests.longrun.conftest import Facts


def test_case_40_the_progress_update_is_five_lines_verbatim():
    task = Facts(note="读取迁移日志", goal="确认表结构", next_check="10m", state="executing")
    assert progress_message(task).split("\n") == [
        "长任务进度提醒：A",
        "当前状态：executing",
        "正在看：读取迁移日志",
        "刚确认：确认表结构",
        "下一步：继续沿当前链路推进，并在 10m 前给出新的阶段结论。",
    ]


def test_case_40_empty_fields_get_the_originals_fallbacks():
    lines = progress_message(Facts(note="", goal="", next_check="")).split("\n")
    assert lines[2:] == [
        "正在看：继续沿当前链路推进",
        "刚确认：继续推进当前长任务",
        "下一步：继续沿当前链路推进，并在 待更新 前给出新的阶段结论。",
    ]


def test_case_49_the_resume_message_verbatim():
    text = resume_message(Facts(), idle_for=61, source="updated_at")
    assert text.split("\n") == [
        "保活续跑：A",
        "当前状态：executing",
        "静默时长：约 61 秒（最近活动源：updated_at）",
        "任务目标：确认表结构",
        "立即继续：读取迁移日志",
        "要求：不要停在说明，直接继续当前任务，并尽快给出新的可见进展。",
    ]
    empty = resume_message(Facts(goal="", note=""), idle_for=61, source="").split("\n")
    assert empty[2:5] == [
        "静默时长：约 61 秒（最近活动源：unknown）",
        "任务目标：继续推进当前任务",
        "立即继续：继续沿上次锚点推进",
    ]


def test_case_64_an_analyzing_task_is_asked_for_a_decision():
    kind, summary, message = recovery_suggestion(
        state="analyzing", kind="recovery", reason="stale_update (10m)", note="看日志", goal="g"
    )
    assert kind == "force-decision"
    assert summary == "分析态停留过久，要求给结论或切执行：看日志"
    assert message == (
        "长任务回收：你之前处于 analyzing，但已超出检查窗口（stale_update (10m)）。"
        "请在本轮给出阶段结论，并明确进入 executing、blocked 或 handoff，不能继续停留在纯分析。"
    )


@pytest.mark.parametrize(
    ("state", "kind", "expected_kind", "summary", "message"),
    [
        (
            "executing",
            "recovery",
            "check-progress",
            "任务仍在执行态但超过检查窗口，确认是否卡住：看日志",
            "长任务回收：你之前处于 executing，但已超出检查窗口（r）。请立刻回报当前进展；"
            "若已阻塞，转 blocked 并说明缺什么；若仍可继续，更新状态并继续推进。",
        ),
        (
            "waiting",
            "recovery",
            "check-waiting",
            "任务处于等待态但已到检查点，去确认外部条件是否已满足：看日志",
            "长任务回收：你之前处于 waiting，原因是 看日志。现在检查等待条件是否已满足；"
            "若仍未满足，更新 next_check；若已满足，继续推进并回报结果。",
        ),
        (
            "executing",
            "progress",
            "progress-ping",
            "任务持续推进中，需要发一条可见进度：看日志",
            "长任务进度：当前仍处于 executing。正在处理：看日志。刚确认：g。"
            "下一步：继续沿当前链路推进，并在本轮更新学习结论。",
        ),
        (
            "done",
            "recovery",
            "manual-review",
            "任务需要人工查看：看日志",
            "长任务回收：任务状态为 done，触发原因 r。请检查并更新状态。",
        ),
    ],
)
def test_case_64_each_kind_of_item_has_its_suggestion(state, kind, expected_kind, summary, message):
    assert recovery_suggestion(state=state, kind=kind, reason="r", note="看日志", goal="g") == (
        expected_kind,
        summary,
        message,
    )


def test_case_65_the_recovery_message_verbatim():
    task = Facts(state="analyzing")
    text = recovery_text(
        task=task,
        kind="recovery",
        reason="stale_update (10m)",
        recovery_kind="force-decision",
        suggested_message="长任务回收：…",
    )
    assert text.split("\n") == [
        "长任务回收提醒：A",
        "当前状态：analyzing",
        "所属边界：数据库",
        "负责会话：迁移会话",
        "触发原因：stale_update (10m)",
        "任务目标：确认表结构",
        "当前备注：读取迁移日志",
        "建议动作：force-decision",
        "建议发往：迁移会话",
        "建议消息：",
        "长任务回收：…",
    ]
    progress = recovery_text(
        task=task, kind="progress", reason="r", recovery_kind="progress-ping", suggested_message="m"
    )
    assert progress.startswith("长任务进度提醒：A\n")


def test_d_b14_an_empty_field_prints_unset_never_none():
    task = Facts(boundary="", session_label="", goal="", note="")
    text = recovery_text(
        task=task, kind="recovery", reason="", recovery_kind="check-progress", suggested_message="m"
    )
    assert "None" not in text
    assert "所属边界：未设置" in text and "负责会话：未设置" in text
    assert "触发原因：未设置" in text and "任务目标：未设置" in text and "当前备注：未设置" in text
    _, summary, message = recovery_suggestion(
        state="waiting", kind="recovery", reason="", note="", goal=""
    )
    assert summary.endswith("：未设置") and "原因是 未设置。" in message
    assert "None" not in summary + message
