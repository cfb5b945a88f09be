"""`GET /metrics` (D-K26): who may read it, what it says, and the config keys it reads."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import configure
from xworkmate.delivery.models import Message
from xworkmate.delivery.services import outbox_enqueue
from xworkmate.models import BeatLease
from xworkmate.wiring import parse_config_text

pytestmark = pytest.mark.django_db


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def scrape(client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = client.get("/metrics")
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain")
    return samples(response.content.decode())


def test_without_a_key_it_is_401_in_the_api_error_shape(anonymous):
    response = anonymous.get("/metrics")
    assert response.status_code == 401
    assert json.loads(response.content)["error"]["code"] == "UNAUTHORIZED"


def test_a_key_without_metrics_read_is_403_naming_the_scope(make_client):
    response = make_client("gateway:write", "delivery:write").get("/metrics")
    assert response.status_code == 403
    assert json.loads(response.content) == {
        "error": {"code": "FORBIDDEN", "message": "API key lacks scope metrics:read"}
    }


def test_a_revoked_or_unknown_key_is_401(db):
    response = Client().get("/metrics", headers={"Authorization": "Bearer xwm_nope"})
    assert response.status_code == 401
    assert json.loads(response.content)["error"]["code"] == "UNAUTHORIZED"


def test_a_client_inside_metrics_networks_needs_no_key(settings):
    client = Client(REMOTE_ADDR="10.1.2.3")
    assert client.get("/metrics").status_code == 401
    configure(settings, "service", metrics_networks=("192.168.0.0/16", "10.0.0.0/8"))
    assert client.get("/metrics").status_code == 200
    outside = Client(REMOTE_ADDR="11.0.0.1").get("/metrics")
    assert outside.status_code == 401
    assert json.loads(outside.content)["error"]["code"] == "UNAUTHORIZED"


def test_the_network_is_read_from_the_configured_proxy_header(settings):
    configure(settings, "service", metrics_networks=("10.0.0.0/8",))
    configure(settings, "admin", client_ip_header="X-Real-IP")
    via_proxy = Client(REMOTE_ADDR="127.0.0.1", headers={"X-Real-IP": "10.9.9.9"})
    assert via_proxy.get("/metrics").status_code == 200
    spoofed = Client(REMOTE_ADDR="127.0.0.1", headers={"X-Real-IP": "8.8.8.8"})
    assert spoofed.get("/metrics").status_code == 401


def test_outbox_messages_by_status_and_channel_and_the_oldest_pending_age(make_client):
    now = timezone.now()
    for key in ("a", "b", "c"):
        outbox_enqueue(
            purpose="longrun.progress", target="agent:main:main", body="x",
            idempotency_key=key, now=now,
        )
    channel = Message.objects.first().channel
    Message.objects.filter(idempotency_key="c").update(status=Message.FAILED)
    Message.objects.filter(idempotency_key="a").update(created_at=now - timedelta(minutes=10))
    got = scrape(make_client("metrics:read"))
    assert got[("xworkmate_outbox_messages", (("channel", channel), ("status", "pending")))] == 2
    assert got[("xworkmate_outbox_messages", (("channel", channel), ("status", "failed")))] == 1
    age = got[("xworkmate_outbox_oldest_pending_age_seconds", (("channel", channel),))]
    assert 600 <= age < 660


def test_requests_are_counted_by_view_method_and_status(make_client):
    client = make_client("metrics:read")
    before = scrape(client)
    outsider = make_client("plans:read")
    for _ in range(3):
        assert outsider.get("/metrics").status_code == 403
    Client().get("/no/such/page")
    after = scrape(client)
    key = ("xworkmate_http_requests_total", (("method", "GET"), ("status", "403"), ("view", "metrics")))
    assert after[key] - before.get(key, 0) == 3
    unmatched = ("xworkmate_http_requests_total", (("method", "GET"), ("status", "404"), ("view", "unmatched")))
    assert after[unmatched] - before.get(unmatched, 0) == 1


def test_the_beat_lease_holder_and_the_apps_figures_are_there(make_client):
    now = timezone.now()
    BeatLease.objects.create(
        name="beat", holder="beat-1@host", acquired_at=now, renewed_at=now,
        expires_at=now + timedelta(seconds=30),
    )
    got = scrape(make_client("metrics:read"))
    assert got[("xworkmate_beat_lease_holder", (("holder", "beat-1@host"),))] == 1
    assert 0 < got[("xworkmate_beat_lease_expires_in_seconds", ())] <= 30
    # Each app's collector, registered in its ready() (the kernel names no app).
    assert got[("xworkmate_plans_scheduler_lag_seconds", ())] == 0
    assert got[("xworkmate_plans_jobs_overdue", ())] == 0
    assert got[("xworkmate_longrun_monitor_items", (("kind", "progress"),))] == 0
    assert got[("xworkmate_longrun_monitor_items", (("kind", "checkpoint"),))] == 0


def test_supervised_restarts_come_from_the_supervisors_state_file(make_client, settings, tmp_path):
    settings.HOME = tmp_path
    (tmp_path / "supervisor.json").write_text(json.dumps({
        "pid": 1,
        "children": {
            "worker": {"pid": 5, "running": False, "restarts": 3},
            "beat": {"pid": 6, "running": True, "restarts": 0},
        },
    }))
    got = scrape(make_client("metrics:read"))
    assert got[("xworkmate_process_restarts_total", (("process", "worker"),))] == 3
    assert got[("xworkmate_process_running", (("process", "worker"),))] == 0
    assert got[("xworkmate_process_running", (("process", "beat"),))] == 1


def test_the_request_id_is_kept_or_made_and_answered(anonymous):
    given = Client().get("/healthz", headers={"X-Request-ID": "abc-123"})
    assert given["X-Request-ID"] == "abc-123"
    made = Client().get("/healthz", headers={"X-Request-ID": "bad id\"<x>"})
    assert made["X-Request-ID"] != "bad id\"<x>" and len(made["X-Request-ID"]) == 32


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[service]\nmetrics_networks = '10.0.0.0/8'", "service.metrics_networks: must be a list of networks like 10.0.0.0/8 (got '10.0.0.0/8')"),
        ("[service]\nmetrics_networks = ['10.0.0.300/8']", "service.metrics_networks: '10.0.0.300/8' is not a network like 10.0.0.0/8"),
        ("[service]\nlog_format = 'xml'", "service.log_format: must be one of text, json (got 'xml')"),
    ],
)
def test_bad_values_are_refused_naming_the_key(text, problem, tmp_path):
    from xworkmate.config import ConfigError

    with pytest.raises(ConfigError) as caught:
        parse_config_text(text, env={}, home=tmp_path)
    assert caught.value.problems == [f"<text>: {problem}"]


def test_good_values_are_read_normalised(tmp_path):
    from xworkmate.config.kernel import SERVICE

    config = parse_config_text(
        "[service]\nmetrics_networks = ['10.1.2.3/8', '::1']\nlog_format = 'JSON'", env={}, home=tmp_path
    )
    assert SERVICE.of(config).metrics_networks == ("10.0.0.0/8", "::1/128")
    assert SERVICE.of(config).log_format == "json"
