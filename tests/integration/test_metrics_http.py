"""D-K26, D-K27: /metrics from real gunicorn workers beside a real beat on PostgreSQL.

Requests answered by several web workers add up in one scrape (multiprocess
mode), the beat's lease holder shows, and the beat's log has each line once, at
its own level, never again as `WARNING celery.redirected`.
"""

from __future__ import annotations

import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from tests.integration.conftest import running_gunicorn, wait_for
from xworkmate.services import api_key_create

CONFIG = """
[service]
beat_lease = "6s"
"""
REFUSED_CALLS = 40


def _scrape(base: str, token: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    request = urllib.request.Request(base + "/metrics", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        text = response.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _requests(got, view: str) -> float:
    return float(sum(
        value for (name, labels), value in got.items()
        if name == "xworkmate_http_requests_total" and dict(labels)["view"] == view
    ))



def test_requests_add_up_across_web_workers_and_beat_logs_each_line_once(celery_processes, tmp_path):
    _, token = api_key_create(name="prometheus", scopes=["metrics:read"])
    celery_processes.start("worker", CONFIG)
    beat = celery_processes.start("beat", CONFIG)
    with running_gunicorn(tmp_path, CONFIG, workers=3) as base:
        # Refused scrapes (no key): a series nothing else touches (the start-up
        # probe asks /healthz), so its total is exactly what was sent.
        for _ in range(REFUSED_CALLS):
            try:  # a new connection each: gunicorn's workers take turns accepting
                urllib.request.urlopen(base + "/metrics", timeout=10)
            except urllib.error.HTTPError as exc:
                assert exc.code == 401
                assert b'"UNAUTHORIZED"' in exc.read()
            else:
                raise AssertionError("/metrics answered without a key")
        got = _scrape(base, token)
        refused = ("xworkmate_http_requests_total", (("method", "GET"), ("status", "401"), ("view", "metrics")))
        assert got[refused] == REFUSED_CALLS
        # More than one web worker counted them: each writes a file of its own.
        files = list((tmp_path / "home" / "metrics").glob("counter_*.db"))
        assert len(files) >= 2, files
        assert _requests(got, "healthz") >= 1
        holder = wait_for(
            lambda: [
                dict(labels)["holder"] for (name, labels), value in _scrape(base, token).items()
                if name == "xworkmate_beat_lease_holder" and value == 1
            ],
            timeout=60, what="the beat's lease on /metrics",
        )
        assert f":{beat.pid}:" in holder[0]
    celery_processes.stop()
    beat_log = (tmp_path / "beat.log").read_text(errors="replace")
    worker_log = (tmp_path / "worker.log").read_text(errors="replace")
    service_log = (tmp_path / "home" / "logs" / "xworkmate.log").read_text(errors="replace")
    # The worker's own lines too: once, at their level.
    assert "celery.redirected" not in worker_log, worker_log
    ready = [line for line in worker_log.splitlines() if line.endswith(" ready.")]
    assert len(ready) == 1 and " INFO celery.apps.worker " in ready[0], worker_log
    for log in (beat_log, service_log):
        assert "celery.redirected" not in log, log
        lease_lines = [line for line in log.splitlines() if "holds the beat lease" in line]
        assert len(lease_lines) == 1, log
        assert " INFO xworkmate.periodic " in lease_lines[0], lease_lines
