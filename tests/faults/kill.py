"""What the kill -9 tests share: killing a worker, and the outbox as the kill left it.

A worker is killed as a crash or the OOM killer would: SIGKILL, no cleanup. Either
the whole worker (its main process and its pool children; the test starts another)
or only its pool children (the main process forks new ones and goes on).
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from xworkmate.delivery.models import Attempt, Message

KILLS = ("whole worker", "pool children")


def pool_children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children = (task / "children").read_text().split()
        found += [int(child) for child in children]
    return found


def kill_9(worker: subprocess.Popen[bytes], what: str) -> None:
    """SIGKILL `what` (one of KILLS) of `worker`; the whole worker is reaped before this returns."""
    children = pool_children(worker.pid)
    assert children, "the worker has no pool children"
    for pid in (*children, worker.pid) if what == "whole worker" else children:
        os.kill(pid, signal.SIGKILL)
    if what == "whole worker":
        worker.wait()


def outbox_snapshot() -> dict[str, set[int]]:
    """Each message's state at this moment, from the database."""
    begun_open = set(
        Attempt.objects.filter(finished_at__isnull=True).values_list("message_id", flat=True)
    )
    rows = Message.objects.values_list("pk", "status", "claimed_by", "attempt_count")
    return {
        "sent": {pk for pk, status, _, _ in rows if status == "sent"},
        "begun, no answer": {pk for pk, status, _, _ in rows if status == "unknown"},
        "not begun, claimed": {pk for pk, status, claim, n in rows
                               if status == "pending" and claim and n == 0},
        "not begun": {pk for pk, status, claim, n in rows if status == "pending" and n == 0},
        "open attempts": begun_open,
        "other": {pk for pk, status, _, n in rows
                  if status not in ("sent", "unknown") and not (status == "pending" and n == 0)},
    }
