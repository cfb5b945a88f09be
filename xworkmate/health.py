"""`GET /healthz`: database, broker and periodic jobs, for monitors and load balancers.

Public on purpose (monitors have no API key); it shows states and times, never
URLs, secrets or error texts from other parts. HTTP 503 when something is down.
"""

from __future__ import annotations

import json
import time
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from kombu import Connection
from kombu.exceptions import OperationalError

from xworkmate import __version__
from xworkmate.config import ConfigError
from xworkmate.delivery.selectors import outbox_summary
from xworkmate.periodic import configured_jobs, job_health
from xworkmate.selectors import beat_lease, periodic_job_states
from xworkmate.supervisor import STATE_FILE

BROKER_TIMEOUT_SECONDS = 3


def _bounded(options: dict[str, Any]) -> dict[str, Any]:
    """The broker's options with the health check's own, shorter socket bound (D-K23)."""
    if "socket_timeout" not in options:
        return options
    return options | {
        "socket_timeout": BROKER_TIMEOUT_SECONDS,
        "socket_connect_timeout": BROKER_TIMEOUT_SECONDS,
    }


def check_database() -> dict[str, Any]:
    started = time.monotonic()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError as exc:
        return {"status": "down", "vendor": connection.vendor, "error": type(exc).__name__}
    return {
        "status": "ok",
        "vendor": connection.vendor,
        "latency_ms": round((time.monotonic() - started) * 1000, 2),
    }


def check_broker() -> dict[str, Any]:
    started = time.monotonic()
    url = settings.CELERY_BROKER_URL
    conn = Connection(
        url,
        transport_options=_bounded(settings.CELERY_BROKER_TRANSPORT_OPTIONS),
        connect_timeout=BROKER_TIMEOUT_SECONDS,
    )
    transport = url.split("://", 1)[0]
    try:
        conn.ensure_connection(max_retries=1, interval_start=0, timeout=BROKER_TIMEOUT_SECONDS)
        # The file broker "connects" to anything; prove its folder is usable.
        if transport == "filesystem":
            folder = settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"]
            with open(f"{folder}/.healthz", "w", encoding="ascii") as probe:
                probe.write("ok")
    except _broker_errors(conn) as exc:
        return {"status": "down", "transport": transport, "error": type(exc).__name__}
    finally:
        conn.release()
    return {
        "status": "ok",
        "transport": transport,
        "latency_ms": round((time.monotonic() - started) * 1000, 2),
    }


def _broker_errors(conn: Connection) -> tuple[type[BaseException], ...]:
    # ensure_connection wraps transport errors in kombu's OperationalError.
    errors: tuple[type[BaseException], ...] = (
        OSError, OperationalError, *conn.connection_errors,
    )
    return errors


def check_periodic_jobs(now: Any) -> dict[str, Any]:
    states = periodic_job_states()
    out: dict[str, Any] = {}
    for job in configured_jobs(settings.XWORKMATE):
        state = states.get(job.name)
        health = job_health(
            job,
            beat_seen_at=state.beat_seen_at if state else None,
            last_tick_at=state.last_tick_at if state else None,
            last_status=state.last_status if state else "",
            now=now,
        )
        out[job.name] = {
            "status": health.status,
            "task": job.task,
            "schedule": job.schedule_text,
            "last_tick_at": _iso(state.last_tick_at if state else None),
            "due_by": _iso(health.due_by),
            "runs": state.runs if state else 0,
            "failures": state.failures if state else 0,
        }
    return out


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def supervised_processes() -> dict[str, Any] | None:
    """What `xworkmate run` reports of its children (restarts, last exit codes, D-K24);
    None when the service was not started by it (the production units)."""
    try:
        state = json.loads((settings.HOME / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    children = state.get("children") if isinstance(state, dict) else None
    return children if isinstance(children, dict) else None


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    now = timezone.now()
    database = check_database()
    broker = check_broker()
    jobs: dict[str, Any] = {}
    # Informative, never "down": a message waiting long is the bridge's or the
    # receiver's problem, shown here so a monitor can alert on its age.
    outbox: dict[str, Any] = {}
    beat: dict[str, str] | None = None
    down = database["status"] != "ok" or broker["status"] != "ok"
    if database["status"] == "ok":
        try:
            jobs = check_periodic_jobs(now)
        except ConfigError:
            # `make run` refuses such a config; a process started another way
            # reports it here instead of failing the health check with a 500.
            jobs, down = {"error": "the periodic jobs of the config are invalid"}, True
        else:
            down = down or any(j["status"] in ("stale", "unscheduled") for j in jobs.values())
        outbox = outbox_summary(now)
        beat = beat_lease()
    body = {
        "status": "down" if down else "ok",
        # Which release answers: a deployment checks it after an upgrade (D-K29).
        "version": __version__,
        "checked_at": now.isoformat(),
        "database": database,
        "broker": broker,
        "periodic_jobs": jobs,
        "outbox": outbox,
    }
    if beat is not None:
        body["beat_lease"] = beat
    processes = supervised_processes()
    if processes is not None:
        body["processes"] = processes
    return JsonResponse(body, status=503 if down else 200)
