"""The scheduler's figures for /metrics, read when the scrape comes (D-K26)."""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import Count, Min, Q
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from plans.models import Job

DUE = Q(enabled=True, next_run_at__isnull=False)


class PlansCollector(Collector):
    """Scheduler lag: how far behind its due time the most overdue enabled job is."""

    def collect(self) -> Iterator[Metric]:
        now = timezone.now()
        # One query on the scheduler's own index (plans_job_due).
        row = Job.objects.filter(DUE).aggregate(
            oldest=Min("next_run_at"), overdue=Count("id", filter=Q(next_run_at__lte=now))
        )
        oldest = row["oldest"]
        lag = GaugeMetricFamily(
            "xworkmate_plans_scheduler_lag_seconds",
            "Now minus the due time of the most overdue enabled job; 0 when none is due",
        )
        lag.add_metric([], max(0.0, (now - oldest).total_seconds()) if oldest else 0.0)
        yield lag
        overdue = GaugeMetricFamily(
            "xworkmate_plans_jobs_overdue", "Enabled jobs whose due time has passed"
        )
        overdue.add_metric([], row["overdue"])
        yield overdue
