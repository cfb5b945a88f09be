"""`GET /metrics`: the service as Prometheus sees it (D-K26).

Two kinds of figures, read two ways:

- Requests by view, method and status: a counter each web worker increments
  (RequestMetricsMiddleware). gunicorn runs several workers, so the counter
  lives in prometheus_client's multiprocess mode: each process writes its own
  file under `<data home>/metrics` (PROMETHEUS_MULTIPROC_DIR, set by
  xworkmate.settings before anything imports prometheus_client) and a scrape,
  whichever worker answers it, sums every file. `xworkmate run` empties the
  folder when it starts (clear_multiprocess_dir); a worker gunicorn replaced
  keeps its file for the rest of the run, so a total never goes down mid-run.
- Everything else is read from the database (and the supervisor's state file)
  when the scrape comes, by collectors: the kernel's own here (outbox, beat
  lease, supervised processes) and one per app, registered in its ready()
  with register_collector, so the kernel names no app (D-K1). Nothing is kept
  in memory between scrapes, so beat, the worker and every web worker agree.

Protected: a key with the `metrics:read` scope, or a client address inside
`service.metrics_networks` (read as `admin.client_ip_header` says). Refusals
answer the API's JSON error shape, 401 without a key, 403 with one lacking the
scope.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.translation import gettext
from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.views import APIView

from xworkmate.admin_login import client_ip
from xworkmate.auth import caller_of
from xworkmate.config.kernel import SERVICE
from xworkmate.delivery.selectors import breaker_states, outbox_metrics
from xworkmate.policies import METRICS_READ
from xworkmate.selectors import beat_lease_row
from xworkmate.supervisor import STATE_FILE

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
METRICS_DIR = "metrics"

REQUESTS = Counter(
    "xworkmate_http_requests",
    "HTTP requests answered, by view (the URL pattern's name), method and status",
    ["view", "method", "status"],
)


def multiprocess_dir(home: Path) -> Path:
    return home / METRICS_DIR


def clear_multiprocess_dir(home: Path) -> None:
    """Start a run's request counters at zero: the files of the processes of an
    earlier run (all dead, the run lock says so) would otherwise add to them."""
    folder = multiprocess_dir(home)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)


class RequestMetricsMiddleware:
    """Counts every answer, outermost, so refusals of other middleware count too."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        # The pattern's name, never the path: paths carry ids and would make a
        # series per object (and an outsider could mint series at will).
        view = (match.view_name or "unnamed") if match is not None else "unmatched"
        REQUESTS.labels(view, _method(request.method), str(response.status_code)).inc()
        return response


_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def _method(method: str | None) -> str:
    return method if method in _METHODS else "other"


# --- collectors read at scrape time ------------------------------------------

_COLLECTORS: list[Collector] = []


def register_collector(collector: Collector) -> Collector:
    """An app's figures, read from the database when /metrics is scraped (in ready())."""
    _COLLECTORS.append(collector)
    return collector


def unregister_collector(collector: Collector) -> None:
    if collector in _COLLECTORS:
        _COLLECTORS.remove(collector)


def age_seconds(now: datetime, since: datetime | None) -> float:
    return max(0.0, (now - since).total_seconds()) if since is not None else 0.0


class KernelCollector(Collector):
    """The outbox, the beat lease and the processes `xworkmate run` supervises."""

    def collect(self) -> Iterator[Metric]:
        now = timezone.now()
        messages = GaugeMetricFamily(
            "xworkmate_outbox_messages",
            "Outbox messages by status and channel",
            labels=["status", "channel"],
        )
        oldest = GaugeMetricFamily(
            "xworkmate_outbox_oldest_pending_age_seconds",
            "Age of the oldest pending (not yet confirmed) message by channel; 0 when none",
            labels=["channel"],
        )
        counts, oldest_pending = outbox_metrics()
        for (status, channel), n in sorted(counts.items()):
            messages.add_metric([status, channel], n)
        for channel, created in sorted(oldest_pending.items()):
            oldest.add_metric([channel], age_seconds(now, created))
        yield messages
        yield oldest

        # D-K33: 1 for each channel's current breaker state (0 for the other two).
        breaker = GaugeMetricFamily(
            "xworkmate_delivery_breaker_state",
            "Circuit breaker of a channel: 1 for its current state (closed, open, half_open)",
            labels=["channel", "state"],
        )
        failures = GaugeMetricFamily(
            "xworkmate_delivery_breaker_consecutive_failures",
            "Failed sends in a row on a channel, as its circuit breaker counts them",
            labels=["channel"],
        )
        for channel, shown in breaker_states().items():
            for state in ("closed", "open", "half_open"):
                breaker.add_metric([channel, state], 1 if shown["state"] == state else 0)
            failures.add_metric([channel], float(str(shown["consecutive_failures"])))
        yield breaker
        yield failures

        holder = GaugeMetricFamily(
            "xworkmate_beat_lease_holder",
            "1 for the beat that holds the lease (D-K25), by its name; nothing before any beat",
            labels=["holder"],
        )
        expires = GaugeMetricFamily(
            "xworkmate_beat_lease_expires_in_seconds",
            "Seconds until the beat lease expires unless renewed (negative: expired)",
        )
        lease = beat_lease_row()
        if lease is not None:
            holder.add_metric([lease[0]], 1)
            expires.add_metric([], (lease[1] - now).total_seconds())
        yield holder
        yield expires

        yield from _supervised(settings.HOME / STATE_FILE)


def _supervised(path: Path) -> Iterator[Metric]:
    restarts = CounterMetricFamily(
        "xworkmate_process_restarts",
        "Restarts of a worker or beat by `xworkmate run` since it started (D-K24)",
        labels=["process"],
    )
    running = GaugeMetricFamily(
        "xworkmate_process_running",
        "1 while the supervised process runs, 0 while it waits to be restarted",
        labels=["process"],
    )
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        state = None  # not started by `xworkmate run` (the production units)
    children = state.get("children") if isinstance(state, dict) else None
    if isinstance(children, dict):
        for name, child in sorted(children.items()):
            if isinstance(child, dict):
                restarts.add_metric([name], float(child.get("restarts", 0)))
                running.add_metric([name], 1.0 if child.get("running") else 0.0)
    yield restarts
    yield running


class _Collected(Collector):
    """The registered collectors, as they stand at the scrape."""

    def collect(self) -> Iterable[Metric]:
        for collector in [KernelCollector(), *_COLLECTORS]:
            yield from collector.collect()


def exposition() -> bytes:
    """The text a scrape answers: every process's requests and the collectors' figures."""
    registry = CollectorRegistry(auto_describe=False)
    folder = os.environ.get(MULTIPROC_ENV)
    if folder:
        # prometheus_client leaves this one constructor unannotated.
        MultiProcessCollector(registry, path=folder)  # type: ignore[no-untyped-call]
    else:  # a process started without the settings' folder (never the service)
        registry.register(REQUESTS)
    registry.register(_Collected())
    return generate_latest(registry)


# --- the view ------------------------------------------------------------------


def in_networks(address: str | None, networks: Iterable[str]) -> bool:
    if address is None:
        return False
    ip = ipaddress.ip_address(address)
    return any(ip in ipaddress.ip_network(net) for net in networks)


class MetricsAccess(BasePermission):
    """`metrics:read`, or a client inside `service.metrics_networks` (D-K26)."""

    message = ""

    def has_permission(self, request: Request, view: Any) -> bool:
        networks = SERVICE.of(settings.XWORKMATE).metrics_networks
        if networks and in_networks(client_ip(request), networks):
            return True
        # Said in the request's language, so worded here rather than at import.
        self.message = gettext("API key lacks scope %(scope)s") % {"scope": METRICS_READ}
        return caller_of(request).may(METRICS_READ)


class MetricsView(APIView):
    permission_classes = [MetricsAccess]
    required_scope = METRICS_READ
    # Not in the OpenAPI schema: Prometheus' text format, not the API's JSON.
    schema = None

    def get(self, request: Request) -> HttpResponse:
        response = HttpResponse(exposition(), content_type=CONTENT_TYPE_LATEST)
        response["Cache-Control"] = "no-store"
        return response
