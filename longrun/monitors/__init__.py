"""The monitors Celery beat calls: the heartbeat, the keepalive and the watchdog.

Each is one operation of the original scripts (emit_foreground_due and its
dispatcher, run_keepalive_once, run_watchdog_once) and answers the original's
output and exit code (`Answer`, D-B18); its messages go out only through the
outbox (D-B10), and each send's outcome is recorded by
longrun.services.outcomes.

The monitors find their work through the deadline indexes (longrun.models),
claim each task with SELECT … FOR UPDATE SKIP LOCKED, decide again inside the
claim with the pure rules (a duplicate tick, or another worker, finds nothing
left to do), and handle each task in a transaction of its own, so one task
that fails is an error item of the run and the others go on (D-B5): the
kernel's claim-and-handle loop (xworkmate.claims).
"""

from longrun.monitors.heartbeat import heartbeat_run_once
from longrun.monitors.keepalive import keepalive_run_once
from longrun.monitors.watchdog import watchdog_run_once

__all__ = ["heartbeat_run_once", "keepalive_run_once", "watchdog_run_once"]
