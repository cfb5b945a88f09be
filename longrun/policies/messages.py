"""The texts the original scripts built, verbatim, and the instructions they gave.

Where the original had its own fallback for an empty field (`正在看：继续沿当前
链路推进`), it is kept; where it printed the literal `None`, an empty field
prints `未设置` (D-B14).
"""

from __future__ import annotations

from longrun.policies.facts import TaskFacts
from longrun.policies.states import ANALYZING, EXECUTING, WAITING

__all__ = [
    "DISPATCH_NOTE",
    "KEEPALIVE_INSTRUCTION",
    "KEEPALIVE_PLANNED_NOTE",
    "KEEPALIVE_RESUMED_NOTE",
    "KEEPALIVE_RUN_NOTE",
    "RESUME_DISABLED_NOTE",
    "RESUME_QUEUED_NOTE",
    "START_FAILED",
    "START_OK",
    "TASK_NOT_STARTED",
    "UNSET",
    "WORK_CYCLE_DUE",
    "WORK_CYCLE_NOT_DUE",
    "WORK_CYCLE_PROTOCOL",
    "progress_message",
    "recovery_suggestion",
    "recovery_text",
    "resume_budget_note",
    "resume_message",
]

UNSET = "未设置"

START_OK = "启动校验通过：任务已绑定到真实目标会话。"
START_FAILED = "启动校验失败：不能宣称长任务已在目标会话启动成功。"
TASK_NOT_STARTED = "任务不存在，不能视为已启动。"

WORK_CYCLE_DUE = (
    "这是前台心跳，必须立即发往该任务绑定的 sessionKey；发送成功后必须 touch-progress；"
    "发送失败后必须 mark-progress-attempt，再决定是否继续。"
)
WORK_CYCLE_NOT_DUE = "本轮无需汇报，直接继续下一轮；下一轮结束后再次运行 work_cycle_tick.py。"
WORK_CYCLE_PROTOCOL = {
    "on_success": "必须立即执行 task_state.py touch-progress，然后才能继续下一轮。",
    "on_error": (
        "必须立即执行 task_state.py mark-progress-attempt --error <失败原因>；"
        "若连续触发仍未送达，应转 blocked。"
    ),
}

DISPATCH_NOTE = (
    "此脚本只生成 dispatcher 计划；真正 sessions_send 需由 OpenClaw agent/tool 层执行。"
    "timeout 应记为 unknown，不要直接当 failed 重发。"
)

KEEPALIVE_INSTRUCTION = (
    "若 should_resume=true：先发 resume_message 到当前会话，再执行 task_state.py "
    "mark-resume --task <任务名> --reason idle_timeout。"
)
KEEPALIVE_RESUMED_NOTE = "保活续跑已触发，继续沿上次锚点推进"
KEEPALIVE_PLANNED_NOTE = "保活续跑准备执行 openclaw agent"
# The original named an environment variable; here one config key turns it on.
def resume_budget_note(resumes: int, budget: int) -> str:
    """Why an idle task was blocked instead of resumed again (D-B29)."""
    return (
        f"resume budget spent: {resumes} automatic resumes in the last 24 h "
        f"(longrun.max_resumes_per_day = {budget}); blocked until a person looks at it "
        "and sets its state again"
    )


RESUME_DISABLED_NOTE = (
    "auto resume disabled; set longrun.auto_resume = true to execute openclaw agent"
)
RESUME_QUEUED_NOTE = (
    "resume queued in the outbox (longrun.resume); it counts as a resume only "
    "when the delivery channel confirms it"
)
KEEPALIVE_RUN_NOTE = (
    "默认只生成跟进计划；设置 longrun.auto_resume = true 后才会真正执行自动续跑。"
    "建议每 60s 运行一次。"
)


def _or_unset(value: object) -> str:
    text = "" if value is None else str(value)
    return text if text else UNSET


def progress_message(task: TaskFacts) -> str:
    """A short progress update: 正在看什么 / 刚确认什么 / 下一步是什么 (§7.4)."""
    return "\n".join(
        (
            f"长任务进度提醒：{task.name}",
            f"当前状态：{task.state or ANALYZING}",
            f"正在看：{task.note or '继续沿当前链路推进'}",
            f"刚确认：{task.goal or '继续推进当前长任务'}",
            f"下一步：继续沿当前链路推进，并在 {task.next_check or '待更新'} 前给出新的阶段结论。",
        )
    )


def resume_message(task: TaskFacts, *, idle_for: int, source: str) -> str:
    """The keepalive's resume prompt (§7.9)."""
    return "\n".join(
        (
            f"保活续跑：{task.name}",
            f"当前状态：{task.state or ANALYZING}",
            f"静默时长：约 {idle_for} 秒（最近活动源：{source or 'unknown'}）",
            f"任务目标：{task.goal or '继续推进当前任务'}",
            f"立即继续：{task.note or '继续沿上次锚点推进'}",
            "要求：不要停在说明，直接继续当前任务，并尽快给出新的可见进展。",
        )
    )


def recovery_suggestion(
    *, state: str, kind: str, reason: str, note: str, goal: str
) -> tuple[str, str, str]:
    """(recovery kind, summary, suggested message) for a watchdog item (§7.10)."""
    note_text, reason_text = _or_unset(note), _or_unset(reason)
    if kind == "progress":
        return (
            "progress-ping",
            f"任务持续推进中，需要发一条可见进度：{note_text}",
            # "学习结论" is the original's wording, kept verbatim.
            f"长任务进度：当前仍处于 {_or_unset(state)}。正在处理：{note_text}。"
            f"刚确认：{_or_unset(goal)}。下一步：继续沿当前链路推进，并在本轮更新学习结论。",
        )
    if state == WAITING:
        return (
            "check-waiting",
            f"任务处于等待态但已到检查点，去确认外部条件是否已满足：{note_text}",
            f"长任务回收：你之前处于 waiting，原因是 {note_text}。现在检查等待条件是否已满足；"
            "若仍未满足，更新 next_check；若已满足，继续推进并回报结果。",
        )
    if state == EXECUTING:
        return (
            "check-progress",
            f"任务仍在执行态但超过检查窗口，确认是否卡住：{note_text}",
            f"长任务回收：你之前处于 executing，但已超出检查窗口（{reason_text}）。"
            "请立刻回报当前进展；若已阻塞，转 blocked 并说明缺什么；"
            "若仍可继续，更新状态并继续推进。",
        )
    if state == ANALYZING:
        return (
            "force-decision",
            f"分析态停留过久，要求给结论或切执行：{note_text}",
            f"长任务回收：你之前处于 analyzing，但已超出检查窗口（{reason_text}）。"
            "请在本轮给出阶段结论，并明确进入 executing、blocked 或 handoff，"
            "不能继续停留在纯分析。",
        )
    return (
        "manual-review",
        f"任务需要人工查看：{note_text}",
        f"长任务回收：任务状态为 {_or_unset(state)}，触发原因 {reason_text}。请检查并更新状态。",
    )


def recovery_text(
    *,
    task: TaskFacts,
    kind: str,
    reason: str,
    recovery_kind: str,
    suggested_message: str,
) -> str:
    """The human-readable message emit_recovery_message built for one item (§7.10)."""
    return "\n".join(
        (
            f"长任务{'进度' if kind == 'progress' else '回收'}提醒：{task.name}",
            f"当前状态：{_or_unset(task.state)}",
            f"所属边界：{_or_unset(task.boundary)}",
            f"负责会话：{_or_unset(task.session_label)}",
            f"触发原因：{_or_unset(reason)}",
            f"任务目标：{_or_unset(task.goal)}",
            f"当前备注：{_or_unset(task.note)}",
            f"建议动作：{_or_unset(recovery_kind)}",
            f"建议发往：{_or_unset(task.session_label)}",
            "建议消息：",
            suggested_message,
        )
    )
