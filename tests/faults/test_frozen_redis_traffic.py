"""D-K23 under traffic: a Redis frozen for 45 s, or stopped for 30 s, holds up no
request and loses nothing.

Real gunicorn (one sync worker per client thread), a real Celery worker and
beat, all on the test's own redis-server (never the machine's), a real
webhook receiver. Client threads call the API the whole time: long-run
touch-progress, plans run-now (its agentTurn goes into the outbox, published
after commit), gateway session.prepare and /healthz; beat's foreground
monitor queues the long tasks' heartbeats. In the middle Redis goes away:
frozen with SIGSTOP for 45 s (the kernel accepts connections, nothing
answers), or stopped (SIGTERM) for 30 s and started again on the same port
and directory, empty (connections are refused, and what the broker held
before is gone).

Asserted: every call is answered, each within its kind's worst latency before
the freeze plus the publish's bound; no 5xx but /healthz's documented 503;
after Redis is back every outbox message committed reaches the receiver once,
every run-now that ran is recorded and delivered; the worker is the same
process, alive. The figures are printed (and quoted in the README and D-K23).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from django.conf import settings as django_settings
from django.utils import timezone

from plans.models import Run
from plans.services import Proposal, entry_confirm, plan_propose
from tests.conftest import configure
from tests.delivery.conftest import use_channels
from tests.faults.traffic import CLIENT_TIMEOUT, Calls, loop
from tests.integration.conftest import CeleryProcesses, clear_broker, running_gunicorn, wait_for
from tests.integration.test_delivery_real import SECRET, Receiver
from tests.longrun.conftest import task_set
from tests.support.own_redis import OwnRedis, own_redis
from xworkmate.config import DeliveryChannel
from xworkmate.delivery.models import Message
from xworkmate.delivery.services.enqueue import PUBLISH_RETRY
from xworkmate.services import api_key_create

pytestmark = pytest.mark.integration

WARM_SECONDS = 12
AFTER_SECONDS = 10
PLANS = 12
TOUCHED = 3  # long tasks the client touches
BEATING = 3  # long tasks whose heartbeat beat's monitor queues
# A publish after commit: each try waits at most a connect and a socket timeout,
# and it tries once more after a short pause (D-K23).
PUBLISH_BOUND = (PUBLISH_RETRY["max_retries"] + 1) * 2 * django_settings.BROKER_SOCKET_TIMEOUT + (
    PUBLISH_RETRY["interval_max"]
)
SLACK = 2.0  # a loaded two-CPU machine's scheduling


class Outage(NamedTuple):
    name: str  # what the figures call it
    seconds: int
    begin: Callable[[OwnRedis], None]
    end: Callable[[OwnRedis], None]


OUTAGES = [
    # SIGSTOP: connections are accepted and never answered; the socket timeouts end the waits.
    pytest.param(Outage("frozen Redis (SIGSTOP)", 45, OwnRedis.freeze, OwnRedis.thaw), id="frozen-45s"),
    # SIGTERM, then a new redis-server on the same port: refused, then an empty broker.
    pytest.param(Outage("stopped Redis (SIGTERM)", 30, OwnRedis.stop, OwnRedis.start),
                 id="stopped-30s"),
]


def _proposal() -> Proposal:
    return Proposal(
        task_name="巡检", persona="运维助理", objective="发现异常", result="日报",
        steps=("按计划巡检并归档",), schedule={"kind": "cron", "expr": "0 9 * * *", "tz": "UTC"},
    )


def _config(receiver: Receiver, workspace: Path) -> str:
    return (
        '[delivery]\ndispatch_grace = "3s"\n'
        f'[plans]\nworkspace = "{workspace}"\n'
        f'[workspace]\nroots = ["{workspace}"]\n'
        "[[delivery.channels]]\n"
        f'name = "hook"\nkind = "webhook"\nurl = "{receiver.url}"\nsecret = "{SECRET}"\n'
        'read_timeout = "30s"\n'
        '[delivery.routes]\n"plans.run" = "hook"\n"longrun.progress" = "hook"\n'
        '[[periodic_jobs]]\nname = "delivery-dispatch"\nevery = "2s"\n'
        '[[periodic_jobs]]\nname = "longrun-foreground"\nevery = "2s"\n'
        '[[periodic_jobs]]\nname = "plans-tick"\nenabled = false\n'
    )


@pytest.fixture
def hook(real_services: None, settings: Any) -> Iterator[Receiver]:
    receiver = Receiver()
    channel = DeliveryChannel(name="hook", kind="webhook", url=receiver.url, secret=SECRET)
    use_channels(settings, channel, routes={"plans.run": "hook", "longrun.progress": "hook"})
    clear_broker()
    yield receiver
    receiver.close()
    clear_broker()


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[OwnRedis]:
    with own_redis(tmp_path / "redis") as server:
        yield server


@pytest.mark.parametrize("outage", OUTAGES)
def test_a_redis_frozen_or_stopped_under_traffic_holds_up_no_call_and_loses_nothing(
    outage: Outage, hook: Receiver, redis_server: OwnRedis, tmp_path: Path, settings: Any,
    capsys: Any,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    configure(settings, "plans", workspace=str(workspace))
    now = timezone.now()
    task_ids = []
    for index in range(PLANS):
        entry = plan_propose(
            session_key=f"agent:ops:user:u:direct:chat-{index}", proposal=_proposal(),
            turn_id="turn-1", written_by="test", now=now,
        )
        entry_confirm(task_id=str(entry.task_id), revision=1, message="确认", turn_id="turn-2",
                      now=now)
        task_ids.append(str(entry.task_id))
    for index in range(TOUCHED):
        task_set(f"touched-{index}", key=f"agent:main:touched-{index}", now=now)
    for index in range(BEATING):
        # Owes progress every 3 s: beat's foreground monitor queues its heartbeat.
        task_set(f"beating-{index}", key=f"agent:main:beating-{index}", now=now,
                 progress_every="3s")
    _, token = api_key_create(
        name="traffic", scopes=["gateway:write", "plans:write", "longrun:write", "longrun:read"]
    )
    config = _config(hook, workspace)
    processes = CeleryProcesses(tmp_path, broker_url=redis_server.url())
    calls = Calls()
    stop = threading.Event()
    ran: list[str] = []
    try:
        worker = processes.start("worker", config)
        processes.start("beat", config)
        with running_gunicorn(tmp_path, config, workers=4, broker_url=redis_server.url()) as base:

            def touch(turn: int) -> None:
                calls.call("touch-progress", "POST", f"{base}/api/longrun/task-state/touch-progress",
                           token, {"task": f"touched-{turn % TOUCHED}"})

            def run_now(turn: int) -> None:
                answer = calls.call("run-now", "POST",
                                    f"{base}/api/plans/{task_ids[turn % PLANS]}/run", token, {})
                if isinstance(answer, dict) and answer.get("ran") is True:
                    ran.append(task_ids[turn % PLANS])

            def prepare(turn: int) -> None:
                run = f"run-{uuid.uuid4().hex[:12]}"
                calls.call("session.prepare", "POST",
                           f"{base}/gateway/xworkmate.session.prepare", token,
                           {"schemaVersion": 1, "appThreadKey": f"thread-{turn % 5}",
                            "openclawSessionKey": f"agent:main:thread-{turn % 5}",
                            "runId": run, "requestId": run})

            def health(turn: int) -> None:
                calls.call("healthz", "GET", f"{base}/healthz", token)
                time.sleep(0.5)

            threads = [loop(stop, w) for w in (touch, run_now, prepare, health)]
            for thread in threads:
                thread.start()
            time.sleep(WARM_SECONDS)
            calls.phase = "out"
            outage.begin(redis_server)
            time.sleep(outage.seconds)
            outage.end(redis_server)
            calls.phase = "after"
            time.sleep(AFTER_SECONDS)
            stop.set()
            for thread in threads:
                thread.join(timeout=CLIENT_TIMEOUT + 10)
            assert not any(t.is_alive() for t in threads), "a client thread never got an answer"

        committed = Message.objects.all()
        wait_for(lambda: not committed.exclude(status=Message.SENT).exists(), timeout=90,
                 what="every committed message to be sent once Redis is back")
        assert worker.poll() is None, processes.logs()
    finally:
        stop.set()
        processes.stop()

    keys = set(Message.objects.values_list("idempotency_key", flat=True))
    unanswered = [r for r in calls.rows if r.status == 0]
    server_errors = [r for r in calls.rows
                     if r.status >= 500 and not (r.kind == "healthz" and r.status == 503)]
    kinds = sorted({r.kind for r in calls.rows})
    by_kind: dict[str, int] = defaultdict(int)
    for row in calls.rows:
        by_kind[row.kind] += 1
    runs_out = sum(1 for r in calls.rows if r.kind == "run-now" and r.phase == "out"
                   and isinstance(r.answer, dict) and r.answer.get("ran"))
    with capsys.disabled():  # the figures first, so a failure shows them too
        print(f"\n{outage.name} for {outage.seconds}s: {len(calls.rows)} calls, "
              f"{len(unanswered)} unanswered, 5xx other than healthz 503: {len(server_errors)}; "
              f"publish bound {PUBLISH_BOUND}s")
        for kind in kinds:
            print(f"  {kind}: {by_kind[kind]} calls, worst before {calls.worst(kind, ('before',)):.2f}s, "
                  f"worst during/after {calls.worst(kind, ('out', 'after')):.2f}s")
        print(f"  run-now ran {len(ran)} ({runs_out} while Redis was away), "
              f"{Run.objects.filter(forced=True).count()} recorded; messages "
              f"committed {len(keys)}, delivered {len(hook.by_key)}, lost {len(keys - set(hook.by_key))}; "
              f"worker pid {worker.pid} alive")
    assert not unanswered, unanswered[:5]
    assert not server_errors, server_errors[:5]
    assert kinds == ["healthz", "run-now", "session.prepare", "touch-progress"]
    for kind in kinds:
        # /healthz may answer 503 (the broker, or a job late after the outage); the rest 200.
        good = [r for r in calls.rows if r.kind == kind and (r.status == 200 or kind == "healthz")]
        assert good and {r.phase for r in good} >= {"before", "out", "after"}, kind
        normal = calls.worst(kind, ("before",))
        assert calls.worst(kind, ("out", "after")) <= normal + PUBLISH_BOUND + SLACK, kind
    # The health check saw the broker down while it was away (within its own bound).
    health_out = [r for r in calls.rows if r.kind == "healthz" and r.phase == "out"]
    assert any(r.status == 503 and r.answer["broker"]["status"] == "down" for r in health_out)
    # Nothing committed is lost: every message reached the receiver, once.
    assert set(hook.by_key) == keys and set(hook.by_key.values()) == {1}, hook.by_key
    # Every run-now that ran is recorded, and its agentTurn was delivered.
    runs = Run.objects.filter(forced=True)
    assert runs.count() == len(ran) > 0
    delivered = Message.objects.filter(pk__in=runs.values_list("delivery_message_id", flat=True))
    assert set(delivered.values_list("status", flat=True)) == {Message.SENT}
