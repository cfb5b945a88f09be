"""Long-run mode's figures for /metrics, read when the scrape comes (D-K26)."""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import Count
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from longrun.models import LIVE, LongTask
from longrun.policies.states import ACTIVE_STATES


class LongrunCollector(Collector):
    """Live tasks by state, and what the monitors have due now, by kind:
    `progress` (a visible progress report is owed: the heartbeat's and the
    keepalive's work) and `checkpoint` (an active task's next check has come:
    the watchdog's)."""

    def collect(self) -> Iterator[Metric]:
        now = timezone.now()
        live = LongTask.objects.filter(LIVE)
        tasks = GaugeMetricFamily(
            "xworkmate_longrun_tasks", "Live long tasks by state", labels=["state"]
        )
        counts = dict(live.values_list("state").annotate(n=Count("id")).values_list("state", "n"))
        for state, n in sorted(counts.items()):
            tasks.add_metric([state], n)
        yield tasks
        due = GaugeMetricFamily(
            "xworkmate_longrun_monitor_items",
            "Long tasks a monitor has due now, by kind (progress, checkpoint)",
            labels=["kind"],
        )
        due.add_metric(["progress"], live.filter(progress_due_at__lte=now).count())
        due.add_metric(
            ["checkpoint"],
            live.filter(state__in=ACTIVE_STATES, next_check_at__lte=now).count(),
        )
        yield due
