"""The outbox: enqueue in the caller's transaction, claim, send, record what arrived (D-B10)."""

from __future__ import annotations

import re
import time
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.utils import timezone

from tests.conftest import ApiClient, configure
from xworkmate.delivery.channels.base import Outcome
from xworkmate.delivery.channels.webhook import verify_signature
from xworkmate.delivery.models import Attempt, Message
from xworkmate.delivery.services import (
    DeliveryError,
    message_request_resend,
    messages_claim,
    outbox_enqueue,
    register_outcome_handler,
    sends_begin,
    unregister_outcome_handler,
)
from xworkmate.delivery.tasks import deliver, dispatch
from xworkmate.services import KeyBinding, api_key_create


def _enqueue(purpose="longrun.progress", target="agent:main:main", body="正在看：日志", key="k1"):
    return outbox_enqueue(
        purpose=purpose, target=target, body=body, idempotency_key=key, now=timezone.now()
    )


@pytest.fixture
def outcomes():
    seen: list[tuple[int, Outcome, bool, str]] = []

    def handler(message, outcome, final):
        seen.append((message.pk, outcome, final, message.status))

    register_outcome_handler("longrun.progress", handler)
    yield seen
    unregister_outcome_handler("longrun.progress", handler)


# --- enqueue -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"purpose": "longrun.walk"}, "purpose: must be one of plans.run, longrun.progress"),
        ({"target": "  "}, "target: required"),
        ({"target": "k" * 513}, "target must be at most 512 characters"),
        ({"body": ""}, "body: required"),
        ({"body": "x" * 70000}, "body: must be at most 65536 bytes of UTF-8 (delivery.max_body_bytes)"),
        ({"body": "a\0b"}, "body: must not contain a NUL character"),
        ({"key": ""}, "idempotency_key: required"),
    ],
)
def test_it_refuses_bad_input_naming_the_field_and_writes_nothing(db, kwargs, message):
    with pytest.raises(DeliveryError, match=re.escape(message)):
        _enqueue(**kwargs)
    assert not Message.objects.exists()


def test_enqueuing_again_returns_the_first_message(db, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        first = _enqueue(body="one")
        again = _enqueue(body="two")
    assert again.pk == first.pk and again.body == "one" and Message.objects.count() == 1
    assert len(callbacks) == 0  # a record message waits for the bridge: no worker is asked


def test_a_rolled_back_transaction_leaves_no_message(webhook, django_capture_on_commit_callbacks):
    with (
        django_capture_on_commit_callbacks() as callbacks,
        pytest.raises(RuntimeError),
        transaction.atomic(),
    ):
        _enqueue()
        raise RuntimeError("the state change failed")
    assert not Message.objects.exists() and callbacks == []
    assert webhook.requests == []


# --- webhook: claim, send, record -------------------------------------------------------


def test_a_committed_message_is_sent_by_a_worker_and_counted_when_confirmed(
    webhook, outcomes, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        message = _enqueue()
    assert message.channel == "hook" and message.status == Message.PENDING
    assert len(callbacks) == 1
    assert deliver(message.pk) is True
    message.refresh_from_db()
    assert (message.status, message.attempt_count, message.next_attempt_at) == ("sent", 1, None)
    assert message.sent_at is not None
    attempt = Attempt.objects.get()
    assert (attempt.outcome, attempt.detail, attempt.by) == ("sent", "HTTP 200", "worker")
    assert outcomes == [(message.pk, Outcome.SENT, True, "sent")]
    request = webhook.requests[0]
    assert request["json"]["message"] == "正在看：日志" and request["json"]["idempotencyKey"] == "k1"
    headers = request["headers"]
    assert verify_signature(
        secret="s3", timestamp=headers["X-Xworkmate-Timestamp"], body=request["body"],
        signature=headers["X-Xworkmate-Signature"],
    )
    assert deliver(message.pk) is False  # a second run of the task sends nothing
    assert len(webhook.requests) == 1


def test_a_refused_message_is_retried_with_backoff_until_it_arrives(webhook, outcomes):
    webhook.status = 500
    message = _enqueue()
    deliver(message.pk)
    message.refresh_from_db()
    assert message.status == "failed" and message.last_error.startswith("HTTP 500")
    assert message.next_attempt_at - message.updated_at == timedelta(seconds=30)
    assert outcomes[-1][1:3] == (Outcome.FAILED, False)
    assert dispatch() == 0  # not due yet
    Message.objects.filter(pk=message.pk).update(next_attempt_at=timezone.now())
    webhook.status = 204
    assert dispatch() == 1
    message.refresh_from_db()
    assert message.status == "sent" and message.attempt_count == 2
    assert [a.by for a in message.attempts.all()] == ["worker", "dispatch job"]


def test_it_stops_retrying_after_the_last_attempt(webhook, settings, outcomes):
    configure(settings, "delivery", max_attempts=2)
    webhook.status = 503
    message = _enqueue()
    deliver(message.pk)
    Message.objects.filter(pk=message.pk).update(next_attempt_at=timezone.now())
    dispatch()
    message.refresh_from_db()
    assert (message.status, message.next_attempt_at, message.attempt_count) == ("failed", None, 2)
    assert outcomes[-1][1:3] == (Outcome.FAILED, True)


def test_a_timeout_is_unknown_and_retried_only_after_the_cooldown(webhook, outcomes):
    webhook.delay = 1.0  # beyond the channel's read timeout
    message = _enqueue()
    deliver(message.pk)
    message.refresh_from_db()
    assert message.status == "unknown" and message.sent_at is None
    assert message.next_attempt_at - message.updated_at == timedelta(minutes=2)  # longrun.unknown_cooldown
    assert outcomes[-1][1:3] == (Outcome.UNKNOWN, False)
    webhook.delay = 0
    assert dispatch() == 0  # within the cooldown: never sent twice at once
    Message.objects.filter(pk=message.pk).update(next_attempt_at=timezone.now())
    assert dispatch() == 1
    message.refresh_from_db()
    assert message.status == "sent"
    # Both sends carried the same key: the receiver de-duplicates.
    assert {r["headers"]["Idempotency-Key"] for r in webhook.requests} == {"k1"}


def test_a_worker_that_dies_mid_send_leaves_the_message_unknown(webhook):
    message = _enqueue()
    started = sends_begin(new=True, now=timezone.now(), by="worker", limit=1)
    assert len(started) == 1
    # ... and the worker is killed here: nothing recorded the outcome.
    message.refresh_from_db()
    assert message.status == "unknown" and message.sent_at is None
    assert Attempt.objects.get().finished_at is None
    # Nobody claims it again meanwhile: not the task run twice, not a dispatcher.
    assert messages_claim(new=True, now=timezone.now(), limit=1) == []
    assert messages_claim(new=False, now=timezone.now(), limit=1) == []


def test_a_person_re_sends_a_failed_message_and_is_recorded(webhook, django_capture_on_commit_callbacks):
    webhook.status = 500
    message = _enqueue()
    deliver(message.pk)
    alice = User.objects.create_user("alice")
    webhook.status = 200
    with django_capture_on_commit_callbacks() as callbacks:
        assert message_request_resend(message=Message.objects.get(), user=alice, now=timezone.now())
    assert len(callbacks) == 1  # a worker is asked at once
    assert Message.objects.get().status == "pending"
    deliver(message.pk)  # what that worker does
    message.refresh_from_db()
    assert message.status == "sent"
    assert message.attempts.get(number=2).resent_by == alice
    assert not message_request_resend(message=message, user=alice, now=timezone.now())  # sent stays sent


# --- batches ----------------------------------------------------------------------------


def _keys_sent(webhook) -> list[str]:
    return [request["headers"]["Idempotency-Key"] for request in webhook.requests]


def test_a_worker_sends_the_new_messages_waiting_in_one_batch(webhook, settings, outcomes):
    configure(settings, "delivery", batch_size=3)
    messages = [_enqueue(target=f"agent:main:s{i}", key=f"k{i}") for i in range(5)]
    # A task sends the oldest new messages waiting, up to the batch size ...
    # (five sessions: their sends may be in flight together, in any order).
    assert deliver(messages[1].pk) is True
    assert sorted(_keys_sent(webhook)) == ["k0", "k1", "k2"]
    # ... whether its own is among them or not; the tasks that come later find nothing.
    assert deliver(messages[2].pk) is True
    assert sorted(_keys_sent(webhook)) == ["k0", "k1", "k2", "k3", "k4"]
    assert not any(deliver(message.pk) for message in messages)
    for message in Message.objects.all():
        assert (message.status, message.attempt_count, message.next_attempt_at) == ("sent", 1, None)
        attempt = message.attempts.get()
        assert (attempt.number, attempt.outcome, attempt.by) == (1, "sent", "worker")
        assert attempt.finished_at == message.sent_at
    assert sorted(pk for pk, *_ in outcomes) == sorted(m.pk for m in messages)
    assert {(outcome, final, status) for _, outcome, final, status in outcomes} == {
        (Outcome.SENT, True, "sent")
    }


def test_each_answer_is_recorded_before_the_next_send_of_its_session_begins(webhook, outcomes):
    """D-K30: one session's messages go one at a time, in order, and each answer is in
    the database (its outcome handler ran) before that session's next send begins."""
    events: list[str] = []
    webhook.on_request = lambda request: events.append("received " + request["json"]["idempotencyKey"])
    messages = [_enqueue(target="agent:main:one", key=f"k{i}") for i in range(4)]
    def handler(message, outcome, final):
        events.append("recorded " + message.idempotency_key)

    register_outcome_handler("longrun.progress", handler)
    try:
        assert deliver(messages[0].pk) is True
    finally:
        unregister_outcome_handler("longrun.progress", handler)
    assert [e for e in events if e.startswith(("received", "recorded"))][:8] == [
        f"{what} k{i}" for i in range(4) for what in ("received", "recorded")
    ]


def test_sends_of_different_sessions_are_in_flight_together(webhook, settings):
    configure(settings, "delivery", sends_in_flight=3)
    webhook.delay = 0.3
    messages = [_enqueue(target=f"agent:main:p{i}", key=f"k{i}") for i in range(3)]
    started = time.monotonic()
    assert deliver(messages[0].pk) is True
    # Three sends of 0.3 s each took about one of them, not three.
    assert time.monotonic() - started < 0.85
    assert set(Message.objects.values_list("status", flat=True)) == {"sent"}


def test_a_batch_is_recorded_where_a_bulk_insert_returns_no_ids(webhook, monkeypatch):
    """SQLite before 3.35 (which Django 5.2 still supports) returns no ids from bulk_create."""
    monkeypatch.setattr(
        type(connection.features), "can_return_rows_from_bulk_insert", False, raising=False
    )
    messages = [_enqueue(target=f"agent:main:o{i}", key=f"k{i}") for i in range(3)]
    assert deliver(messages[0].pk) is True
    assert set(Message.objects.values_list("status", flat=True)) == {"sent"}
    assert set(Attempt.objects.values_list("outcome", "detail")) == {("sent", "HTTP 200")}


def test_the_dispatch_job_sends_in_batches_until_nothing_is_due(webhook, settings):
    configure(settings, "delivery", batch_size=2)
    for i in range(5):
        _enqueue(target=f"agent:main:d{i}", key=f"k{i}")
    assert dispatch() == 0  # within the grace: the workers were asked
    Message.objects.update(next_attempt_at=timezone.now())
    assert dispatch() == 5
    assert sorted(_keys_sent(webhook)) == [f"k{i}" for i in range(5)]
    assert set(Attempt.objects.values_list("by", flat=True)) == {"dispatch job"}


def test_a_failing_outcome_handler_spoils_only_its_own_message(webhook):
    def handler(message, outcome, final):
        if message.target.endswith(":bad"):
            raise RuntimeError("the caller's bookkeeping failed")

    good = _enqueue(target="agent:main:good", key="k1")
    bad = _enqueue(target="agent:main:bad", key="k2")
    other = _enqueue(target="agent:main:other", key="k3")
    register_outcome_handler("longrun.progress", handler)
    try:
        with pytest.raises(RuntimeError, match="the caller's bookkeeping failed"):
            deliver(good.pk)
    finally:
        unregister_outcome_handler("longrun.progress", handler)
    assert len(webhook.requests) == 3
    statuses = dict(Message.objects.values_list("target", "status"))
    assert statuses == {
        "agent:main:good": "sent", "agent:main:bad": "unknown", "agent:main:other": "sent"
    }
    # The bad one is left as after a worker that died mid-send: its attempt open.
    assert Attempt.objects.get(message=bad).finished_at is None
    assert Attempt.objects.get(message=other).outcome == "sent"


def test_a_batch_stops_starting_sends_when_its_time_is_up(webhook, settings):
    # Half the unknown cooldown bounds a batch's sends: 0.2 s here; each takes 0.3 s,
    # one at a time.
    configure(settings, "longrun", unknown_cooldown=timedelta(seconds=0.4))
    configure(settings, "delivery", sends_in_flight=1)
    webhook.delay = 0.3
    first = _enqueue(target="agent:main:a", key="k1")
    for target in ("b", "c"):
        _enqueue(target=f"agent:main:{target}", key=f"k-{target}")
    before = timezone.now()
    assert deliver(first.pk) is True
    assert _keys_sent(webhook) == ["k1"]  # the others never left the service
    first.refresh_from_db()
    assert first.status == "sent"
    # Released as if never claimed: pending, due at once, no attempt counted.
    rest = Message.objects.exclude(pk=first.pk)
    for message in rest:
        assert (message.status, message.attempt_count) == ("pending", 0)
        assert before <= message.next_attempt_at <= timezone.now()
    assert not Attempt.objects.filter(message__in=rest).exists()
    webhook.delay = 0
    assert deliver(first.pk) is True  # the next task takes them
    assert _keys_sent(webhook) == ["k1", "k-b", "k-c"]
    assert set(rest.values_list("status", "attempt_count")) == {("sent", 1)}


def test_a_record_message_is_never_pushed(db, settings):
    message = _enqueue()
    assert message.channel == "record" and message.next_attempt_at is None
    assert deliver(message.pk) is False and dispatch() == 0
    assert Message.objects.get().status == "pending"


# --- the record channel: fetch and acknowledge over HTTP ----------------------------------


@pytest.mark.parametrize("limit", ["0", "-1", "x", "201", "9" * 5000, "0" * 10 + "5000"])
def test_a_limit_out_of_range_is_refused_naming_it(db, limit):
    _, token = api_key_create(name="bridge", scopes=["delivery:read"])
    answer = ApiClient(token).get(f"/api/delivery/pending?sessionKey=agent:main:a&limit={limit}")
    assert answer.status_code == 400
    assert answer.json()["error"]["message"] == "limit: must be an integer from 1 to 100"


def test_the_bridge_fetches_and_acknowledges_record_messages(db, outcomes):
    _, token = api_key_create(name="bridge", scopes=["delivery:write"])
    bridge = ApiClient(token)
    message = _enqueue(target="agent:main:a")
    _enqueue(target="agent:main:b", key="k2")
    answer = bridge.get("/api/delivery/pending?sessionKey=agent:main:a").json()
    assert [m["id"] for m in answer["messages"]] == [message.pk]
    shown = answer["messages"][0]
    assert (shown["sessionKey"], shown["message"], shown["idempotencyKey"]) == ("agent:main:a", "正在看：日志", "k1")
    assert shown["createdAt"].endswith("Z")
    assert Message.objects.get(pk=message.pk).status == "pending"  # fetched is not delivered
    response = bridge.post(f"/api/delivery/{message.pk}/ack")
    assert response.json() == {"id": message.pk, "status": "sent", "acknowledged": True}
    assert Message.objects.get(pk=message.pk).status == "sent"
    assert outcomes == [(message.pk, Outcome.SENT, True, "sent")]
    assert bridge.post(f"/api/delivery/{message.pk}/ack").json()["acknowledged"] is False
    assert bridge.get("/api/delivery/pending?sessionKey=agent:main:a").json() == {"messages": [], "hasMore": False}


def test_it_answers_one_page_of_pending_messages_and_says_more_wait(db):
    """D-K13: at most `limit` (100 at most), oldest first; the rest come after the acks."""
    _, token = api_key_create(name="bridge", scopes=["delivery:write"])
    bridge = ApiClient(token)
    sent = [_enqueue(target="agent:main:a", key=f"k{i}").pk for i in range(3)]
    first = bridge.get("/api/delivery/pending?sessionKey=agent:main:a&limit=2").json()
    assert ([m["id"] for m in first["messages"]], first["hasMore"]) == (sent[:2], True)
    for message in first["messages"]:
        bridge.post(f"/api/delivery/{message['id']}/ack")
    rest = bridge.get("/api/delivery/pending?sessionKey=agent:main:a&limit=2").json()
    assert ([m["id"] for m in rest["messages"]], rest["hasMore"]) == (sent[2:], False)
    twice = bridge.get("/api/delivery/pending?sessionKey=agent:main:a&limit=1&limit=100")
    assert twice.status_code == 400
    assert twice.json()["error"]["message"] == "limit: given more than once (it takes one value)"


def test_an_agent_key_sees_and_acknowledges_its_own_session_only(db):
    _, token = api_key_create(
        name="agent", scopes=["delivery:write"], binding=KeyBinding(session_key="agent:main:a", run_id="r")
    )
    agent = ApiClient(token)
    mine = _enqueue(target="agent:main:a")
    theirs = _enqueue(target="agent:main:b", key="k2")
    assert [m["id"] for m in agent.get("/api/delivery/pending").json()["messages"]] == [mine.pk]
    refused = agent.get("/api/delivery/pending?sessionKey=agent:main:b")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "FORBIDDEN"
    assert agent.post(f"/api/delivery/{theirs.pk}/ack").status_code == 404
    assert Message.objects.get(pk=theirs.pk).status == "pending"


def test_the_delivery_scope_is_required(db, make_client):
    gateway = make_client("gateway:write")
    reader = make_client("delivery:read")
    assert gateway.get("/api/delivery/pending?sessionKey=x").status_code == 403
    assert reader.get("/api/delivery/pending?sessionKey=x").status_code == 200
    assert reader.post("/api/delivery/1/ack").status_code == 403
    assert make_client().get("/api/delivery/pending?sessionKey=x").status_code == 401
    bad = make_client("delivery:read").get("/api/delivery/pending")
    assert bad.status_code == 400 and "sessionKey" in bad.json()["error"]["message"]


def test_health_reports_the_oldest_pending_message(client, db):
    _enqueue()
    outbox = client.get("/healthz").json()["outbox"]
    assert outbox["pending"] == 1 and outbox["oldest_pending_age_seconds"] >= 0


def test_a_message_still_being_sent_cannot_be_re_sent_beside_it(webhook):
    """An open attempt younger than the cooldown may still arrive: no second send beside it."""
    message = _enqueue()
    sends_begin(new=True, now=timezone.now(), by="worker", limit=1)
    message.refresh_from_db()
    assert not message_request_resend(message=message, user=None, now=timezone.now())
    later = timezone.now() + timedelta(minutes=3)  # the worker is surely gone by now
    assert message_request_resend(message=message, user=None, now=later)
