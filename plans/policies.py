"""Pure rules of the plans app. No database, no clock: callers pass what they know.

What counts as a person's explicit confirmation of a PLAN.md revision (§2.4,
D-C5); what a vague request's clarification must contain (§2.2); the shape a
job must keep (D-C7); when a job runs next, after a run and after downtime
(§8.4, §8.5, D-C8, D-C10); how a job shows in a list (§6). Each refusal names
the rule it enforces.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

# The fire times of a schedule (catch-up, skips while a run is out or in backoff) are
# their own module; the names stay importable from here.
from plans.firetimes import (
    MAX_MISSED_RECORDED,
    FireTimes,
    fire_times,
    fire_times_between,
    fires_after,
    first_fire_at_or_after,
)
from plans.firetimes import schedule_kind as _kind
from plans.requests import clarification_problems, is_schedule_request
from plans.runpolicy import CatchUp, catch_up
from plans.runtimeout import (
    DEFAULT_RUN_TIMEOUT_MS,
    RUN_TIMED_OUT,
    run_timed_out,
    timeout_seconds,
)
from plans.schedule import ScheduleError, compute_next_run_ms, parse_at_ms

__all__ = [
    "BACKOFF_MS",
    "DEFAULT_RUN_TIMEOUT_MS",
    "DELIVERY",
    "MAX_MISSED_RECORDED",
    "RUN_TIMED_OUT",
    "STUCK_RUNNING_MS",
    "CatchUp",
    "ConfirmationVerdict",
    "FireTimes",
    "JobOutcome",
    "SeenTurn",
    "backoff_until_ms",
    "catch_up",
    "clarification_problems",
    "confirmation_verdict",
    "display_status",
    "fire_times",
    "fire_times_between",
    "fires_after",
    "first_fire_at_or_after",
    "first_instruction",
    "is_schedule_request",
    "job_next_run_ms",
    "job_outcome",
    "job_shape_problems",
    "later_turn_problem",
    "message_problem",
    "normalise_message",
    "run_timed_out",
    "timeout_seconds",
]

# Words that turn a reply into a change request (§2.4 "改/换/调整/不过/但是…").
_CHANGE_MARKERS = ("改", "换", "调整", "不过", "但是", "修改", "变更", "而是", "除了")
# Acknowledgements that are not explicit (§2.4: ask again explicitly).
_ACKNOWLEDGEMENTS = ("嗯", "嗯嗯", "好", "好的", "行", "可以", "ok", "okay", "收到", "知道了")
_TRAILING = re.compile(r"[。！!.\s]+$")


@dataclass(frozen=True)
class ConfirmationVerdict:
    confirmed: bool
    rule: str  # why not, naming the rule; "" when confirmed


def normalise_message(message: str) -> str:
    """Trimmed, trailing 。！!. removed, case folded (`按这个建 cron` = `按这个建 Cron`)."""
    return _TRAILING.sub("", message.strip()).casefold()


def confirmation_verdict(
    *,
    message: str,
    phrases: Iterable[str],
    message_turn: str,
    revision_turn: str,
    revision_number: int,
    current_revision_number: int,
) -> ConfirmationVerdict:
    """Whether `message`, from turn `message_turn`, confirms PLAN.md revision `revision_number`.

    All must hold (§2.3 transition 6): another turn than the one that wrote the
    revision (F1); the revision is still the newest (D-C3); the message is, once
    normalised, exactly one of `plans.confirmation_phrases` (F2, F3), so a
    change request, a question or a bare acknowledgement never is.
    """

    def refused(rule: str) -> ConfirmationVerdict:
        return ConfirmationVerdict(False, rule)

    if not message_turn.strip():
        return refused("turnId: required, the conversation turn the user's message comes from")
    if message_turn == revision_turn:
        return refused(
            f"F1: not in the turn that wrote PLAN.md revision {revision_number}; "
            "the user confirms in a later turn"
        )
    if revision_number != current_revision_number:
        return refused(
            f"D-C3: revision {revision_number} is no longer current; "
            f"revision {current_revision_number} is the one to confirm"
        )
    normalised = normalise_message(message)
    if normalised in {normalise_message(phrase) for phrase in phrases}:
        return ConfirmationVerdict(True, "")
    if any(marker in normalised for marker in _CHANGE_MARKERS):
        return refused(
            "§2.4: a change request is not a confirmation; write the change into "
            "PLAN.md as a new revision and ask again"
        )
    if normalised.endswith(("?", "？")) or "吗" in normalised:
        return refused("§2.4: a question is not a confirmation; answer it and ask again")
    if normalised in _ACKNOWLEDGEMENTS:
        return refused(
            "§2.4: an acknowledgement alone is not explicit; ask the user to confirm explicitly"
        )
    return refused(
        "F2/F3: not an explicit confirmation; the message must be one of "
        "plans.confirmation_phrases (e.g. 确认)"
    )


# How a refusal names the role a turn had when the plan first saw it (plans.Turn.ROLES).
_ROLE_WORDS = {"disk-writer": "presumed writer", "change-requester": "change requester"}


@dataclass(frozen=True)
class SeenTurn:
    """What a plan knows of a turn: as what, of which revision, it first saw it (D-C18)."""

    role: str
    revision_number: int
    seen_after: int


def later_turn_problem(
    *,
    turn: str,
    seen: SeenTurn | None,
    revision_number: int,
    author_known: bool,
    by_agent: bool,
    agent_key_issued_before_revision: bool,
) -> str | None:
    """Why `turn` may not confirm revision `revision_number`; None when it may (D-C18).

    A confirmation must come from a turn later than the revision: one the plan
    first saw only after the revision was recorded, or never saw. A revision
    whose author is unknown (found on disk) is presumed to be the agent's own
    work, since agents write their workspace: no agent key confirms it. An
    agent key's turn is its run (D-C14), and a key issued before the revision
    was recorded belongs to an earlier run.
    """
    if by_agent and not author_known:
        return (
            f"D-C18: revision {revision_number} was read from PLAN.md on disk and its author "
            "is unknown; an agent key cannot confirm it: a person confirms it in the admin, "
            "or the bridge relays the user's answer from a later turn"
        )
    if seen is not None and seen.seen_after < revision_number:
        role = _ROLE_WORDS.get(seen.role, seen.role)
        return (
            f"D-C18: turn {turn} cannot confirm revision {revision_number}: this plan saw it "
            f"before that revision was recorded (as the {role} of revision "
            f"{seen.revision_number}); the user confirms in a later turn"
        )
    if agent_key_issued_before_revision:
        return (
            f"D-C18: this agent key was issued before revision {revision_number} was recorded, "
            "so it speaks for an earlier turn; the user confirms in a later run"
        )
    return None


# --- the job's shape (§4, D-C7) ----------------------------------------------------------


def first_instruction(archive_id: str, task_id: str) -> str:
    """The mandatory first instruction of a job's message (§4.1)."""
    return f"从路径 archives/{archive_id}/PLAN.md 中读取 Task_ID: {task_id} 的详细计划并按步骤执行"


def message_problem(message: str, *, archive_id: str, task_id: str) -> str | None:
    """Why a job message breaks §4.3, or None: trimmed, it must start with the instruction."""
    if not isinstance(message, str) or not message.strip():
        return "message: required, it starts with the first instruction"
    expected = first_instruction(archive_id, task_id)
    if not message.strip().startswith(expected):
        return f"message: the first instruction must be 「{expected}」 (§4.1, D-C7)"
    return None


# The one delivery a plan's job has (D-C7).
DELIVERY = {"mode": "none", "bestEffort": True}
_JOB_KEYS = {"name", "sessionTarget", "wakeMode", "payload", "delivery", "enabled"}


def _lower(value: object) -> object:
    # OpenClaw's normaliser trims and lower-cases these before checking them.
    return value.strip().lower() if isinstance(value, str) else value


def _is_http_url(value: object) -> bool:
    if not isinstance(value, str):
        return False
    parts = urlsplit(value.strip())
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def job_shape_problems(job: Mapping[str, object]) -> list[str]:
    """Why a cron.add-style job (as an agent would send OpenClaw) breaks D-C7; [] if it keeps it.

    OpenClaw's own checks come first with its messages (§8.3: a main job needs a
    systemEvent, an isolated one an agentTurn, channel delivery only for isolated
    jobs); then this service's stricter shape: isolated, agentTurn, wakeMode now,
    delivery none with bestEffort. Absent fields take those values (case 35).
    """
    unknown = sorted(set(job) - _JOB_KEYS)
    if unknown:
        return [f"job.{unknown[0]}: not a field of a plan's job ({', '.join(sorted(_JOB_KEYS))})"]
    # Present but null is not absent: the schema says what each one is.
    nulls = sorted(name for name, value in job.items() if value is None)
    if nulls:
        return [f"job.{nulls[0]}: must not be null (leave it out for the default)"]
    if not isinstance(job.get("name", ""), str):
        return ["job.name: must be a string"]
    target = _lower(job.get("sessionTarget", "isolated"))
    payload = job.get("payload", {"kind": "agentTurn"})
    kind = payload.get("kind") if isinstance(payload, Mapping) else None
    kind = {"agentturn": "agentTurn", "systemevent": "systemEvent"}.get(str(_lower(kind)), kind)
    delivery = job.get("delivery")
    problems: list[str] = []
    if target == "main" and kind != "systemEvent":
        problems.append('main cron jobs require payload.kind="systemEvent"')
    elif target == "isolated" and kind != "agentTurn":
        problems.append('isolated cron jobs require payload.kind="agentTurn"')
    if target == "main" and isinstance(delivery, Mapping) and delivery.get("mode") not in (
        None, "none", "webhook"
    ):
        problems.append(
            'cron channel delivery config is only supported for sessionTarget="isolated"'
        )
    if (
        isinstance(delivery, Mapping)
        and _lower(delivery.get("mode")) == "webhook"
        and not _is_http_url(delivery.get("to"))
    ):
        # OpenClaw's assertDeliverySupport (§8.3), before this service's own rule.
        problems.append("cron webhook delivery requires delivery.to to be a valid http(s) URL")
    if target != "isolated":
        problems.append('job.sessionTarget: must be "isolated" (D-C7)')
    if isinstance(payload, Mapping):
        extra = sorted(set(payload) - {"kind", "message", "timeoutSeconds"})
        if extra:
            problems.append(f"job.payload.{extra[0]}: not a field of an agentTurn payload here")
        if not isinstance(payload.get("message", ""), str):
            problems.append("job.payload.message: must be a string")
        if "timeoutSeconds" in payload and timeout_seconds(payload) is None:
            problems.append(
                "job.payload.timeoutSeconds: must be a number >= 0 (seconds; 0 = no timeout)"
            )
    else:
        problems.append("job.payload: must be an object")
    if _lower(job.get("wakeMode", "now")) != "now":
        problems.append('job.wakeMode: must be "now" (D-C7)')
    if delivery is not None and (
        not isinstance(delivery, Mapping) or _lower(delivery.get("mode")) != "none"
        or delivery.get("bestEffort") is not True or set(delivery) - {"mode", "bestEffort"}
    ):
        problems.append('job.delivery: must be {"mode": "none", "bestEffort": true} (D-C7)')
    if job.get("enabled", True) is not True:
        problems.append("job.enabled: a plan's job starts enabled; pause it after confirming")
    return problems


# --- when a job runs (§8.4, §8.5, D-C8, D-C10) -----------------------------------------------

# OpenClaw's error backoff, indexed by consecutive errors (capped at the last).
BACKOFF_MS = (30_000, 60_000, 300_000, 900_000, 3_600_000)
# A run marker older than this is a worker that died: cleared at the next tick.
STUCK_RUNNING_MS = 2 * 3_600_000
# A cron job that succeeded runs again no sooner than this after it ended.
_MIN_GAP_MS = 2_000
def backoff_until_ms(*, ended_ms: int, consecutive_errors: int) -> int:
    """When a job's error backoff ends (D-C8): its last failed run's end plus the step
    for its consecutive errors (at least 1), capped at the last."""
    step = BACKOFF_MS[min(max(consecutive_errors, 1), len(BACKOFF_MS)) - 1]
    return ended_ms + step


def job_next_run_ms(
    schedule: Mapping[str, object],
    *,
    now_ms: int,
    host_tz: str,
    job_id: str,
    last_run_at_ms: int | None,
    last_status: str,
) -> int | None:
    """OpenClaw's `computeJobNextRunAtMs`: the schedule's next run, at job level.

    An `at` stays due, even in the past, until it succeeds; an `every` job that
    ran continues from its last run when that is still ahead.
    """
    kind = _kind(schedule)
    if kind == "at":
        if last_status == "ok":
            return None
        return parse_at_ms(schedule.get("at"))
    if kind == "every" and last_run_at_ms is not None:
        raw = schedule.get("everyMs")
        every = int(raw) if isinstance(raw, int | float) else 0
        if every > 0 and last_run_at_ms + every > now_ms:
            return last_run_at_ms + every
    return compute_next_run_ms(schedule, now_ms=now_ms, host_tz=host_tz, job_id=job_id)


@dataclass(frozen=True)
class JobOutcome:
    next_run_ms: int | None
    enabled: bool
    removed: bool  # a one-shot that succeeded leaves the schedule (kept, not deleted)
    consecutive_errors: int
    schedule_error: str = ""


def job_outcome(
    schedule: Mapping[str, object],
    *,
    status: str,
    ended_ms: int,
    consecutive_errors: int,
    host_tz: str,
    job_id: str,
    run_at_ms: int | None,
    retry_one_shot: bool = False,
) -> JobOutcome:
    """OpenClaw's `applyJobResult` (§8.5) with the backoff of D-C8.

    `status` is ok, error or skipped; `consecutive_errors` is the count before
    this run. A one-shot is removed after success and disabled after anything
    else (no retry unless the plan asks for it, D-C8); a recurring job that
    failed waits at least its backoff, one that succeeded at least 2 s.
    `run_at_ms` is the fire time the run stood for (D-C20: an `every` continues on
    its grid from it), or None for a run forced off the grid.
    """
    errors = consecutive_errors + 1 if status == "error" else 0
    kind = _kind(schedule)
    if kind == "at":
        if status == "ok":
            return JobOutcome(None, False, True, errors)
        if status == "error" and retry_one_shot and errors <= len(BACKOFF_MS):
            return JobOutcome(ended_ms + BACKOFF_MS[errors - 1], True, False, errors)
        return JobOutcome(None, False, False, errors)
    try:
        natural = job_next_run_ms(
            schedule,
            now_ms=ended_ms,
            host_tz=host_tz,
            job_id=job_id,
            last_run_at_ms=run_at_ms,
            last_status=status,
        )
    except ScheduleError as exc:
        return JobOutcome(None, True, False, errors, schedule_error=f"schedule error: {exc}")
    if natural is None:
        return JobOutcome(None, True, False, errors)
    if status == "error":
        until = backoff_until_ms(ended_ms=ended_ms, consecutive_errors=errors)
        if natural >= until:
            return JobOutcome(natural, True, False, errors)
        # The backoff outlasts the next fire time: the job runs again at the first fire
        # time of its own grid after the backoff, not at the backoff's end (D-C21); the
        # fire times it passes by get their skipped rows (plans/services/_runs.py).
        following = first_fire_at_or_after(schedule, at_ms=until, host_tz=host_tz,
                                           job_id=job_id)
        return JobOutcome(following, True, False, errors)
    if kind == "cron":
        return JobOutcome(max(natural, ended_ms + _MIN_GAP_MS), True, False, errors)
    return JobOutcome(natural, True, False, errors)


# --- the list's display status (§6) -----------------------------------------------------------

_DISPLAY = {"ok": ("done", "已完成"), "error": ("failed", "失败"), "skipped": ("skipped", "已跳过")}


def display_status(
    *, enabled: bool, running_at_ms: int | None, last_run_status: str
) -> tuple[str, str]:
    """(code, 中文) of a job in a list, as the original product shows it (§6, case 91)."""
    if not enabled:
        return "disabled", "已暂停"
    if running_at_ms is not None:
        return "running", "执行中"
    return _DISPLAY.get(last_run_status, ("pending", "待执行"))
