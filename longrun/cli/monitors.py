"""Validation, the foreground heartbeat (§7.2–§7.8), keepalive (§7.9), the watchdog and
recovery (§7.10) and cleanup: each script one call of a selector or a service.

The watchdog's, recover's and emit's text without --json is rendered by
longrun.cli.running (the table's `render`), as the skill's wrappers render it.
"""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Callable

from django.utils import timezone

from longrun import selectors, services
from longrun.cli._args import BY, minutes, seconds
from longrun.policies.answers import Answer

__all__ = ["HANDLERS"]

# By the operation's name in the table (longrun/skill/scripts/_operations.py).
HANDLERS: dict[str, Callable[[Namespace], Answer]] = {
    "validate-task-start": lambda args: selectors.task_start_validation(
        name=args.task,
        expect_session_key=args.expect_session_key or "",
        expect_states=args.expect_states or (),
    ),
    "check-foreground-progress": lambda args: selectors.foreground_check(
        name=args.task, now=timezone.now()
    ),
    "build-progress-update": lambda args: selectors.progress_update(name=args.task),
    "foreground-tick": lambda args: selectors.foreground_tick(name=args.task, now=timezone.now()),
    "work-cycle-tick": lambda args: selectors.work_cycle_tick(
        name=args.task, step=args.step, now=timezone.now()
    ),
    "emit-foreground-due": lambda args: selectors.foreground_due_events(
        now=timezone.now(),
        stale=minutes(args.stale_minutes),
        unknown_cooldown=minutes(args.unknown_cooldown_minutes),
    ),
    "dispatch-foreground-due": lambda args: selectors.foreground_dispatch_plan(
        now=timezone.now(), unknown_cooldown=minutes(args.unknown_cooldown_minutes)
    ),
    "keepalive-tick": lambda args: selectors.keepalive_tick(
        name=args.task, now=timezone.now(), idle=seconds(args.idle_seconds)
    ),
    "emit-keepalive-resume": lambda args: selectors.keepalive_resume_event(
        name=args.task, now=timezone.now(), idle=seconds(args.idle_seconds)
    ),
    "run-keepalive-once": lambda args: services.keepalive_run_once(
        now=timezone.now(), idle=seconds(args.idle_seconds), by=BY
    ),
    "watchdog": lambda args: selectors.watchdog_check(
        now=timezone.now(), stale=minutes(args.stale_minutes)
    ),
    "recover-due-tasks": lambda args: selectors.recovery_report(
        now=timezone.now(), stale=minutes(args.stale_minutes)
    ),
    "emit-recovery-message": lambda args: selectors.recovery_messages(
        now=timezone.now(), stale=minutes(args.stale_minutes)
    ),
    "build-sessions-send-payloads": lambda args: selectors.sessions_send_payloads(
        now=timezone.now(), stale=minutes(args.stale_minutes)
    ),
    "run-watchdog-once": lambda args: services.watchdog_run_once(
        now=timezone.now(), stale=minutes(args.stale_minutes), by=BY
    ),
    "cleanup-state": lambda args: services.tasks_cleanup(
        now=timezone.now(),
        apply=args.apply,
        drop_tasks=args.drop_task,
        drop_test_prefixes=args.drop_test_prefix,
    ),
}
