"""Celery tasks of the long-run app (adapters: they only call a service).

Beat runs them as the default periodic jobs registered in LongrunConfig.ready()
(longrun-foreground, -keepalive, -watchdog, -cleanup). Each is safe to run twice
and to run beside itself: the monitors claim every task with SKIP LOCKED, decide
again inside the claim and send through the outbox under a per-slot idempotency
key (D-B20), and cleanup finds nothing left to do the second time. So they ack
late (D-K6): a tick lost with a dying worker is run again, never skipped.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.utils import timezone

from longrun.monitors import heartbeat_run_once, keepalive_run_once, watchdog_run_once
from longrun.services import tasks_cleanup


def _counts(body: Any, **fields: str) -> dict[str, int]:
    """A run's report reduced to its counts; what each task went through is in its log."""
    counts = {name: len(body.get(field, ())) for name, field in fields.items()}
    return counts | {"errors": len(body.get("errors", ()))}


@shared_task(name="longrun.foreground_due", time_limit=60, soft_time_limit=50, acks_late=True)
def foreground_due() -> dict[str, int]:
    """Queue the heartbeat of every task that owes visible progress (emit + dispatch)."""
    body = heartbeat_run_once(now=timezone.now()).body
    return _counts(body, queued="events", skipped_unknown="skipped_unknown")


@shared_task(name="longrun.keepalive", time_limit=60, soft_time_limit=50, acks_late=True)
def keepalive() -> dict[str, int]:
    """Plan (or, with longrun.auto_resume, queue) the resume of every idle task."""
    body = keepalive_run_once(now=timezone.now()).body
    return _counts(body, dispatches="dispatches")


@shared_task(name="longrun.watchdog", time_limit=300, soft_time_limit=270, acks_late=True)
def watchdog() -> dict[str, int]:
    """Send each overdue task its recovery message (run_watchdog_once)."""
    body = watchdog_run_once(now=timezone.now()).body
    return _counts(body, payloads="payloads")


@shared_task(name="longrun.cleanup", time_limit=600, soft_time_limit=540, acks_late=True)
def cleanup() -> dict[str, int]:
    """cleanup_state --apply: drop test and broken tasks, archive old finished ones (D-B16)."""
    body = tasks_cleanup(now=timezone.now(), apply=True).body
    return _counts(body, dropped="dropped", archived="archived", lock_repairs="lock_repairs")
