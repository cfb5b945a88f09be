"""D-K30: a send is marked when it begins, not when its batch is claimed.

A batch's claim is only a lease on the message: until its send begins, the
message stays as it was (pending, no attempt, nothing counted), another batch
cannot take it, and once the lease runs out (its worker died) it is claimable
again. Beginning a send re-checks the lease inside its transaction. Attempts
whose worker is gone are closed by the dispatch job with the reason, and an
unknown message on a channel that does not de-duplicate is re-sent only by the
admin action that says it may arrive twice.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from tests.delivery.conftest import use_channels
from xworkmate.config import DeliveryChannel
from xworkmate.delivery.channels.base import Outcome, Result
from xworkmate.delivery.models import Attempt, Message
from xworkmate.delivery.services import (
    CLAIM_LEASE,
    attempts_close_abandoned,
    deliveries_step,
    messages_claim,
    messages_release,
    outbox_enqueue,
    sends_begin,
)
from xworkmate.delivery.tasks import ABANDONED_AFTER, deliver, dispatch

LIST = "/admin/delivery/message/"


def _enqueue(target="agent:main:a", key="k1", when=None):
    return outbox_enqueue(purpose="longrun.progress", target=target, body="正在看：日志",
                          idempotency_key=key, now=when or timezone.now())


def test_a_claimed_message_stays_as_it_was_until_its_send_begins(webhook):
    message = _enqueue()
    now = timezone.now()
    [claim] = messages_claim(new=True, now=now, limit=10)
    # ... and the worker is killed here, before any send began.
    message.refresh_from_db()
    assert (message.status, message.attempt_count, message.sent_at) == ("pending", 0, None)
    assert message.claimed_by == claim.token
    assert not Attempt.objects.exists()
    # No other batch takes it while the claim holds ...
    assert messages_claim(new=True, now=now + CLAIM_LEASE - timedelta(seconds=1), limit=10) == []
    # ... and once it ran out, the next one does, and sends it as a first attempt.
    later = now + CLAIM_LEASE + timedelta(seconds=1)
    [again] = messages_claim(new=True, now=later, limit=10)
    assert again.token != claim.token
    [started] = deliveries_step(finished=[], start=[again], renew=[], now=later, by="worker")
    assert started.envelope.attempt == 1
    assert webhook.requests == []  # nothing was ever sent by the dead batch


def test_a_batch_whose_claim_ran_out_and_was_taken_over_does_not_send_it(webhook):
    _enqueue()
    now = timezone.now()
    [stale] = messages_claim(new=True, now=now, limit=1)
    later = now + CLAIM_LEASE + timedelta(seconds=1)
    [fresh] = messages_claim(new=True, now=later, limit=1)
    # The first batch wakes up: its claim is re-checked inside the step, and refused.
    assert deliveries_step(finished=[], start=[stale], renew=[], now=later, by="slow") == []
    [started] = deliveries_step(finished=[], start=[fresh], renew=[], now=later, by="worker")
    assert Attempt.objects.get().by == "worker" and started.envelope.attempt == 1
    # Nor may it begin a send on its own claim once that ran out, taken over or not.
    _enqueue(target="agent:main:b", key="k2")
    [expired] = messages_claim(new=True, now=now, limit=1)
    assert deliveries_step(finished=[], start=[expired], renew=[], now=later, by="slow") == []


def test_a_batch_renews_the_claims_of_the_messages_still_waiting(webhook):
    _enqueue()
    now = timezone.now()
    [claim] = messages_claim(new=True, now=now, limit=1)
    renewed_at = now + CLAIM_LEASE - timedelta(seconds=2)
    deliveries_step(finished=[], start=[], renew=[claim], now=renewed_at, by="worker")
    assert Message.objects.get().claim_expires_at == renewed_at + CLAIM_LEASE
    # Still this batch's after the first lease would have run out.
    assert messages_claim(new=True, now=now + CLAIM_LEASE + timedelta(seconds=1), limit=1) == []
    [started] = deliveries_step(
        finished=[], start=[claim], renew=[], now=now + CLAIM_LEASE + timedelta(seconds=1),
        by="worker",
    )
    assert started.envelope.attempt == 1


def test_a_released_claim_leaves_the_message_due_at_once_with_nothing_counted(webhook):
    message = _enqueue()
    now = timezone.now()
    claims = messages_claim(new=True, now=now, limit=1)
    messages_release(claims, now)
    message.refresh_from_db()
    assert (message.status, message.attempt_count, message.claimed_by) == ("pending", 0, "")
    assert message.next_attempt_at == now and message.claim_expires_at is None
    assert len(messages_claim(new=False, now=now, limit=1)) == 1  # the dispatch job's too


def test_a_begun_send_is_unknown_with_its_attempt_open_and_its_answer_closes_it(webhook):
    message = _enqueue()
    now = timezone.now()
    [started] = sends_begin(new=True, now=now, limit=1, by="worker")
    message.refresh_from_db()
    assert (message.status, message.attempt_count, message.claimed_by) == ("unknown", 1, "")
    attempt = Attempt.objects.get()
    assert (attempt.number, attempt.started_at, attempt.finished_at) == (1, now, None)
    deliveries_step(finished=[(started, Result(Outcome.SENT, "HTTP 200"))], start=[], renew=[],
                    now=now, by="worker")
    message.refresh_from_db()
    assert message.status == "sent"
    assert Attempt.objects.get().outcome == "sent"


def test_the_dispatch_job_closes_abandoned_attempts_with_the_reason(webhook):
    message = _enqueue(when=timezone.now() - timedelta(minutes=10))
    begun = timezone.now() - ABANDONED_AFTER - timedelta(seconds=1)
    sends_begin(new=True, now=begun, limit=1, by="worker")  # its worker died mid-send
    young = _enqueue(target="agent:main:b", key="k2")
    sends_begin(new=True, now=timezone.now(), limit=1, by="worker")  # still under way
    # The webhook de-duplicates: the dispatch job sends the old one again ...
    dispatch()
    old_attempt = Attempt.objects.get(message=message, number=1)
    assert old_attempt.outcome == "unknown" and old_attempt.finished_at is not None
    assert old_attempt.detail.startswith(f"abandoned: the send began at {begun.isoformat()}")
    assert "may or may not have arrived" in old_attempt.detail
    message.refresh_from_db()
    assert message.status == "sent" and message.attempt_count == 2
    # ... and leaves the one that may still be under way alone.
    assert Attempt.objects.get(message=young).finished_at is None
    assert attempts_close_abandoned(timezone.now(), older_than=ABANDONED_AFTER) == 0


@pytest.fixture
def openclaw_unknown(db, settings, webhook):
    """An unknown message on a channel that does not de-duplicate (OpenClaw's)."""
    channel = DeliveryChannel(name="oc", kind="openclaw", binary="true")
    use_channels(settings, settings.XWORKMATE.delivery_channels[1], channel,
                 routes={"longrun.progress": "hook", "longrun.resume": "oc"})
    message = outbox_enqueue(purpose="longrun.resume", target="agent:main:oc", body="继续",
                             idempotency_key="k-oc", now=timezone.now() - timedelta(minutes=10))
    assert message.channel == "oc"
    sends_begin(new=True, now=timezone.now() - timedelta(minutes=5), limit=1, by="worker")
    attempts_close_abandoned(timezone.now(), older_than=ABANDONED_AFTER)
    message.refresh_from_db()
    assert message.status == "unknown" and message.last_error.startswith("abandoned: ")
    # Nothing sends it again by itself.
    assert message.next_attempt_at is None and dispatch() == 0
    return message


@pytest.fixture
def staff(client, db):
    user = User.objects.create_superuser("alice", "", "pw-alice-123")
    client.force_login(user)
    return user


def test_the_admin_says_what_an_unknown_message_means_and_what_to_do(client, staff, openclaw_unknown):
    page = client.get(f"{LIST}{openclaw_unknown.pk}/change/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "A send began and no answer was recorded: it may or may not have arrived." in page
    assert "does not de-duplicate" in page
    assert "abandoned: the send began at" in page


def test_re_sending_an_unknown_message_that_may_arrive_twice_takes_the_action_that_says_so(
    client, staff, openclaw_unknown, django_capture_on_commit_callbacks, monkeypatch
):
    import xworkmate.celery

    monkeypatch.setattr(xworkmate.celery.app, "send_task", lambda *a, **k: None)
    chosen = {"_selected_action": [openclaw_unknown.pk]}
    with django_capture_on_commit_callbacks(execute=True):
        refused = client.post(LIST, {"action": "resend_messages", **chosen}, follow=True,
                              HTTP_ACCEPT_LANGUAGE="en")
    page = refused.content.decode()
    assert "1 unknown message(s) not re-sent: they may have arrived" in page
    assert Message.objects.get(pk=openclaw_unknown.pk).status == "unknown"
    with django_capture_on_commit_callbacks(execute=True):
        accepted = client.post(LIST, {"action": "resend_messages_accepting_doubles", **chosen},
                               follow=True, HTTP_ACCEPT_LANGUAGE="en")
    assert "1 message(s) queued for re-sending." in accepted.content.decode()
    message = Message.objects.get(pk=openclaw_unknown.pk)
    assert (message.status, message.resend_requested_by) == ("pending", staff)


def test_a_worker_sends_a_claimed_batch_end_to_end(webhook):
    messages = [_enqueue(target=f"agent:main:e{i}", key=f"k{i}") for i in range(6)]
    assert deliver(messages[0].pk) is True
    assert set(Message.objects.values_list("status", "attempt_count", "claimed_by")) == {
        ("sent", 1, "")
    }
    assert sorted(r["headers"]["Idempotency-Key"] for r in webhook.requests) == [
        f"k{i}" for i in range(6)
    ]
