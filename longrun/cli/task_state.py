"""task_state.py (§7.1): each subcommand one call of a service or a selector."""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Callable

from django.utils import timezone

from longrun import selectors, services
from longrun.cli._args import BY
from longrun.policies.answers import Answer

__all__ = ["HANDLERS"]


def _set(args: Namespace) -> Answer:
    return services.task_set(
        name=args.task,
        session=args.session,
        state=args.state,
        goal=args.goal,
        done_when=args.done_when,
        blocked_when=args.blocked_when,
        boundary=args.boundary,
        next_check=args.next_check,
        note=args.note,
        origin_session_key=args.origin_session_key or "",
        progress_every=args.progress_every or "",
        force_lock=args.force_lock,
        reopen=args.reopen,
        by=BY,
        now=timezone.now(),
    )


def _progress(outcome: services.ProgressOutcome) -> Callable[[Namespace], Answer]:
    def record(args: Namespace) -> Answer:
        return services.task_progress_record(
            name=args.task,
            outcome=outcome,
            error=getattr(args, "error", None) or "",
            note=args.note or "",
            delivery_id=args.delivery_id or "",
            message_hash=args.message_hash or "",
            by=BY,
            now=timezone.now(),
        )

    return record


def _activity(signal: services.ActivitySignal) -> Callable[[Namespace], Answer]:
    def record(args: Namespace) -> Answer:
        return services.task_activity_record(
            name=args.task, signal=signal, note=args.note or "", by=BY, now=timezone.now()
        )

    return record


def _resume(args: Namespace) -> Answer:
    return services.task_resume_record(
        name=args.task, reason=args.reason or "", note=args.note or "", by=BY, now=timezone.now()
    )


def _acquire(args: Namespace) -> Answer:
    return services.lock_acquire(
        session_key=args.session, name=args.task, force=args.force, now=timezone.now()
    )


def _release(args: Namespace) -> Answer:
    return services.lock_release(session_key=args.session, name=args.task or "")


def _clear(args: Namespace) -> Answer:
    return services.task_clear(name=args.task) if args.task else services.tasks_clear_all()


# By the operation's name in the table (longrun/skill/scripts/_operations.py).
HANDLERS: dict[str, Callable[[Namespace], Answer]] = {
    "set": _set,
    "touch-progress": _progress("touch"),
    "mark-progress-attempt": _progress("attempt"),
    "mark-progress-sent": _progress("sent"),
    "mark-progress-unknown": _progress("unknown"),
    "mark-progress-failed": _progress("failed"),
    "mark-visible-reply": _activity("visible_reply"),
    "mark-tool-result": _activity("tool_result"),
    "mark-resume": _resume,
    "acquire-lock": _acquire,
    "release-lock": _release,
    "locks": lambda args: selectors.locks_show(),
    "list": lambda args: selectors.tasks_list(),
    "show": lambda args: selectors.task_show(name=args.task),
    "clear": _clear,
}
