"""A channel's circuit breaker (D-K33), driven through the real outbox against real receivers.

Two webhook receivers on 127.0.0.1: `primary` (fails, then recovers) and its
`fallback`. The workers' task (`deliver`) and the dispatch job (`dispatch`) do
the sending, as in production; the cool-down is passed by moving the breaker's
`probe_after` back, as the other outbox tests move `next_attempt_at`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from tests.conftest import ApiClient, configure
from tests.delivery.conftest import Receiver, use_channels
from xworkmate.config import ConfigError, DeliveryChannel
from xworkmate.delivery.breaker_rules import Answer, after_answers, fallback_route
from xworkmate.delivery.models import Breaker, Message
from xworkmate.delivery.services import breakers_tick, outbox_enqueue
from xworkmate.delivery.tasks import deliver, dispatch
from xworkmate.services import api_key_create
from xworkmate.wiring import parse_config_text

PURPOSE = "longrun.progress"
THRESHOLD = 3


@pytest.fixture
def fallback() -> Iterator[Receiver]:
    running = Receiver()
    yield running
    running.close()


def _channels(settings, primary: Receiver, fallback: Receiver | None) -> None:
    channels = [
        DeliveryChannel(
            name="primary",
            kind="webhook",
            url=primary.url,
            read_timeout=timedelta(seconds=0.5),
            fallback="backup" if fallback is not None else "",
        )
    ]
    if fallback is not None:
        channels.append(DeliveryChannel(name="backup", kind="webhook", url=fallback.url))
    use_channels(settings, *channels, routes={PURPOSE: "primary"})
    configure(settings, "delivery", breaker_failures=THRESHOLD)


@pytest.fixture
def wired(db, settings, receiver: Receiver, fallback: Receiver) -> tuple[Receiver, Receiver]:
    _channels(settings, receiver, fallback)
    return receiver, fallback


def _enqueue(key: str, target: str = "agent:main:main") -> Message:
    return outbox_enqueue(
        purpose=PURPOSE, target=target, body=f"正在看：{key}", idempotency_key=key,
        now=timezone.now(),
    )


def _send_new(*keys: str) -> list[Message]:
    """Enqueue one message per key, each for its own session, and let a worker send them."""
    messages = [_enqueue(key, target=f"agent:main:{key}") for key in keys]
    for message in messages:
        deliver(message.pk)
    return [Message.objects.get(pk=m.pk) for m in messages]


def _breaker() -> Breaker:
    return Breaker.objects.get(channel="primary")


def _cool_down() -> None:
    Breaker.objects.filter(channel="primary").update(probe_after=timezone.now())


def _notices(receiver: Receiver) -> list[str]:
    return [r["json"]["message"] for r in receiver.requests if r["json"]["purpose"] == "delivery.breaker"]


def _payloads(receiver: Receiver) -> list[str]:
    return [r["json"]["idempotencyKey"] for r in receiver.requests if r["json"]["purpose"] == PURPOSE]


# --- the pure rules --------------------------------------------------------------------------


def _answers(*sent: bool) -> list[Answer]:
    return [Answer(message_id=i, sent=s, detail=f"d{i}", target="t") for i, s in enumerate(sent)]


def test_it_opens_at_the_threshold_of_failures_in_a_row_and_a_success_resets_the_count():
    assert after_answers("closed", 0, None, _answers(False, False), threshold=3).state == "closed"
    reset = after_answers("closed", 2, None, _answers(True, False, False), threshold=3)
    assert (reset.state, reset.failures, reset.opened) == ("closed", 2, False)
    opened = after_answers("closed", 2, None, _answers(False), threshold=3)
    assert (opened.state, opened.opened, opened.last_failure.detail) == ("open", True, "d0")


def test_only_the_probe_decides_a_half_open_breaker():
    late = after_answers("half_open", 3, 7, _answers(True, False), threshold=3)
    assert (late.state, late.opened, late.closed) == ("half_open", False, False)
    probe_ok = after_answers("half_open", 3, 1, _answers(False, True), threshold=3)
    assert (probe_ok.state, probe_ok.failures, probe_ok.closed) == ("closed", 0, True)
    probe_bad = after_answers("half_open", 3, 0, _answers(False), threshold=3)
    assert (probe_bad.state, probe_bad.opened) == ("open", True)
    # Answers of sends begun before it opened change nothing.
    assert after_answers("open", 3, None, _answers(True), threshold=3).state == "open"


def test_the_fallback_is_the_first_closed_channel_down_the_chain():
    chain = {"a": "b", "b": "c"}
    assert fallback_route("a", chain, {"a"}) == "b"
    assert fallback_route("a", chain, {"a", "b"}) == "c"
    assert fallback_route("a", chain, {"a", "b", "c"}) is None
    assert fallback_route("c", chain, {"c"}) is None
    assert fallback_route("a", {"a": "b", "b": "a"}, {"a", "b"}) is None  # never loops


# --- opening, falling back, telling a person once ---------------------------------------------


def test_the_breaker_opens_at_n_failures_and_the_fallback_gets_the_messages_and_one_notice(wired):
    primary, backup = wired
    primary.status = 500
    _send_new("m1", "m2")
    assert _breaker().state == "closed" and _breaker().failures == 2
    assert len(primary.requests) == 2

    _send_new("m3")  # the third failure in a row
    breaker = _breaker()
    assert breaker.state == "open" and breaker.failures == THRESHOLD
    assert breaker.last_error.startswith("HTTP 500")
    assert len(primary.requests) == THRESHOLD

    # No more sends to the open channel: a new message waits for the tick.
    later = _send_new("m4", "m5")
    assert len(primary.requests) == THRESHOLD
    assert all(m.channel == "primary" and m.attempt_count == 0 for m in later)

    dispatch()  # the tick moves every message still to be sent, then sends what is due
    assert len(primary.requests) == THRESHOLD
    moved = Message.objects.filter(purpose=PURPOSE).order_by("idempotency_key")
    assert [(m.idempotency_key, m.channel, m.routed_from, m.status) for m in moved] == [
        (f"m{i}", "backup", "primary", "sent") for i in range(1, 6)
    ]
    assert all(
        m.route_note.startswith("moved from primary to backup at ")
        and "after 3 consecutive failed sends (last: HTTP 500" in m.route_note
        for m in moved
    )
    assert sorted(_payloads(backup)) == ["m1", "m2", "m3", "m4", "m5"]  # each exactly once
    # Each message's attempts say which channel each send went to.
    assert [a.channel for a in moved[0].attempts.order_by("number")] == ["primary", "backup"]

    notices = _notices(backup)
    assert len(notices) == 1, notices
    assert notices[0].startswith("Delivery circuit breaker OPEN on channel primary: 3 consecutive")
    assert "投递熔断" in notices[0]

    # More messages while it is open: moved too, and still one notice.
    _send_new("m6", "m7")
    dispatch()
    assert sorted(_payloads(backup))[-2:] == ["m6", "m7"]
    assert len(_notices(backup)) == 1 and len(primary.requests) == THRESHOLD


def test_a_probe_after_the_cool_down_closes_the_breaker_and_says_so(wired):
    primary, backup = wired
    primary.status = 500
    _send_new("m1", "m2", "m3")
    dispatch()
    assert _breaker().state == "open"

    dispatch()  # within the cool-down: no probe
    assert _breaker().state == "open" and len(primary.requests) == THRESHOLD

    primary.status = 200  # the receiver is back
    _cool_down()
    probe = _enqueue("p1", target="agent:main:probe")
    other = _enqueue("p2", target="agent:main:other")
    breakers_tick(timezone.now())
    breaker = _breaker()
    assert breaker.state == "half_open" and breaker.probe_message_id == probe.pk
    deliver(other.pk)  # a worker sends only the probe to the half-open channel
    assert _payloads(primary)[THRESHOLD:] == ["p1"]
    assert _breaker().state == "closed" and _breaker().failures == 0
    assert "closed at " in _breaker().note and f"message {probe.pk}" in _breaker().note

    # The one held back while it probed goes to the primary channel again; the
    # notice that it closed goes where the first one went.
    dispatch_all()
    closed = _notices(backup)
    assert len(closed) == 2 and closed[1].startswith("Delivery circuit breaker CLOSED on channel primary")
    assert Message.objects.get(pk=other.pk).channel == "primary"
    assert Message.objects.get(pk=other.pk).status == "sent"
    assert "p2" in _payloads(primary)


def dispatch_all() -> None:
    Message.objects.filter(status__in=("pending", "failed"), next_attempt_at__isnull=False).update(
        next_attempt_at=timezone.now()
    )
    dispatch()


def test_a_failed_probe_opens_it_again_without_another_notice(wired):
    primary, backup = wired
    primary.status = 503
    _send_new("m1", "m2", "m3")
    dispatch()
    _cool_down()
    probe = _enqueue("p1")
    dispatch()  # half-open, the probe is sent and fails
    breaker = _breaker()
    assert breaker.state == "open" and "the probe failed" in breaker.note
    assert breaker.probe_after > timezone.now() + timedelta(minutes=4)  # a new cool-down
    assert len(_payloads(primary)) == THRESHOLD + 1
    dispatch_all()  # the failed probe is moved like the others
    assert Message.objects.get(pk=probe.pk).channel == "backup"
    assert Message.objects.get(pk=probe.pk).status == "sent"
    assert len(_notices(backup)) == 1 and breaker.times_opened == 1


def test_without_a_fallback_the_messages_are_held_and_say_why(db, settings, receiver):
    _channels(settings, receiver, None)
    receiver.status = 500
    _send_new("m1", "m2", "m3")
    dispatch()
    held = Message.objects.filter(purpose=PURPOSE)
    assert all(m.channel == "primary" and m.routed_from == "" for m in held)
    assert all(
        m.route_note.startswith("held on primary: the circuit breaker of channel primary opened")
        and "no fallback channel takes it, so it waits for the probe after" in m.route_note
        for m in held
    )
    assert len(receiver.requests) == THRESHOLD
    dispatch_all()
    assert len(receiver.requests) == THRESHOLD  # held: nothing sent

    receiver.status = 200
    _cool_down()
    dispatch()  # half-open: the oldest held message probes, and closes it
    assert _breaker().state == "closed"
    dispatch_all()
    assert sorted(_payloads(receiver)[THRESHOLD:]) == ["m1", "m2", "m3"]
    assert set(Message.objects.filter(purpose=PURPOSE).values_list("status", flat=True)) == {"sent"}


def test_a_record_fallback_hands_the_messages_and_the_notice_to_the_bridge(db, settings, receiver):
    use_channels(
        settings,
        DeliveryChannel(name="primary", kind="webhook", url=receiver.url, fallback="record"),
        routes={PURPOSE: "primary"},
    )
    configure(settings, "delivery", breaker_failures=2)
    receiver.status = 502
    for key in ("m1", "m2"):
        deliver(_enqueue(key).pk)  # one session: the bridge fetches both for it
    dispatch()
    _, token = api_key_create(name="bridge", scopes=["delivery:write"])
    bridge = ApiClient(token)
    waiting = bridge.get("/api/delivery/pending?sessionKey=agent:main:main").json()["messages"]
    assert [(m["purpose"], m["idempotencyKey"]) for m in waiting] == [
        (PURPOSE, "m1"),
        (PURPOSE, "m2"),
        ("delivery.breaker", "breaker:primary:1:opened"),
    ]
    assert waiting[2]["message"].startswith("Delivery circuit breaker OPEN on channel primary")
    for shown in waiting:
        assert bridge.post(f"/api/delivery/{shown['id']}/ack").json()["acknowledged"] is True
    assert set(Message.objects.values_list("status", flat=True)) == {"sent"}


def test_a_message_whose_outcome_is_unknown_is_never_moved(db, settings, receiver, fallback):
    _channels(settings, receiver, fallback)
    receiver.delay = 1.0  # past the read timeout: every send is unknown
    _send_new("m1", "m2", "m3")
    assert _breaker().state == "open"
    receiver.delay = 0
    dispatch_all()
    kept = Message.objects.filter(purpose=PURPOSE)
    assert all(m.channel == "primary" and m.status == "unknown" for m in kept)
    assert all("its last send's outcome is unknown" in m.route_note for m in kept)
    assert _payloads(fallback) == []  # never a second copy on the fallback


def test_two_ticks_pick_one_probe(wired):
    primary, _ = wired
    primary.status = 500
    _send_new("m1", "m2", "m3")
    dispatch()
    _cool_down()
    first, second = _enqueue("p1"), _enqueue("p2", target="agent:main:b")
    now = timezone.now()
    breakers_tick(now)
    breakers_tick(now)
    assert _breaker().probe_message_id == first.pk
    assert Message.objects.get(pk=second.pk).route_note == ""


# --- where a person sees it --------------------------------------------------------------------


def test_the_admin_health_and_metrics_show_an_open_breaker(wired, client, make_client):
    primary, _ = wired
    primary.status = 500
    _send_new("m1", "m2", "m3")
    user = User.objects.create_superuser("alice", "", "pw-alice-123")
    client.force_login(user)
    landing = client.get("/admin/").content.decode()
    assert 'id="xworkmate-notices"' in landing
    assert "primary" in landing and "backup" in landing
    listing = client.get("/admin/delivery/breaker/").content.decode()
    assert "primary" in listing
    health = client.get("/healthz").json()
    assert health["outbox"]["breakers"]["primary"]["state"] == "open"
    assert health["outbox"]["breakers"]["primary"]["consecutive_failures"] == THRESHOLD
    metrics = make_client("metrics:read").get("/metrics").content.decode()
    assert 'xworkmate_delivery_breaker_state{channel="primary",state="open"} 1.0' in metrics
    # Closed again: the notice leaves the landing page.
    Breaker.objects.filter(channel="primary").update(
        state="closed", failures=0, opened_at=None, probe_after=None
    )
    assert 'id="xworkmate-notices"' not in client.get("/admin/").content.decode()


# --- the config ---------------------------------------------------------------------------------


def _problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_config_text(text, env={}, home=__import__("pathlib").Path("/tmp/xwm-breaker"))
    return [p.removeprefix("<text>: ") for p in info.value.problems]


HOOK = "[[delivery.channels]]\nname = 'a'\nkind = 'webhook'\nurl = 'https://a.example'\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (HOOK + "fallback = 'a'", "delivery.channels[0].fallback: must name another channel, not 'a' itself"),
        (HOOK + "fallback = 'nowhere'", "delivery.channels[0].fallback: no channel named 'nowhere' (channels: a, record)"),
        (
            HOOK + "fallback = 'b'\n[[delivery.channels]]\nname = 'b'\nkind = 'webhook'\nurl = 'https://b.example'\nfallback = 'a'",
            "delivery.channels[0].fallback: fallbacks must not form a cycle (a -> b -> a)",
        ),
        (HOOK + "fallback = ''", "delivery.channels[0].fallback: must not be empty"),
        ("[[delivery.channels]]\nname = 'r'\nkind = 'record'\nfallback = 'record'", "delivery.channels[0].fallback: not a key of a record channel"),
        ("[delivery]\nbreaker_failures = 0", "delivery.breaker_failures: must be an integer >= 1 (got 0)"),
        ("[delivery]\nbreaker_cooldown = '0s'", "delivery.breaker_cooldown: '0s' must be longer than zero"),
    ],
)
def test_config_errors_name_the_key_and_the_rule(text, expected):
    found = _problems(text)
    assert any(p.startswith(expected) for p in found), found


def test_a_fallback_chain_without_a_cycle_is_accepted():
    config = parse_config_text(
        HOOK + "fallback = 'record'\n[delivery]\nbreaker_failures = 2\nbreaker_cooldown = '30s'",
        env={},
        home=__import__("pathlib").Path("/tmp/xwm-breaker"),
    )
    assert [c.fallback for c in config.delivery_channels] == ["", "record"]
    assert re.fullmatch(r"0:00:30", str(config.value("delivery", "breaker_cooldown")))
