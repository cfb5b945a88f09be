"""The outbox in the admin: the list, one message with its attempts, and "Re-send" (issue 10 §6)."""

from __future__ import annotations

import html
from datetime import timedelta
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.admin.utils import label_for_field
from django.contrib.auth.models import Permission, User
from django.utils import timezone, translation

import xworkmate.celery
from xworkmate.delivery.models import Attempt, Breaker, Message
from xworkmate.delivery.services import DELIVER_TASK, outbox_enqueue
from xworkmate.delivery.tasks import deliver

LIST = "/admin/delivery/message/"


def _enqueue(*, target: str = "agent:main:a", key: str = "k1", purpose: str = "longrun.progress"):
    return outbox_enqueue(
        purpose=purpose, target=target, body="正在看：日志", idempotency_key=key, now=timezone.now()
    )


@pytest.fixture
def staff(client, db) -> User:
    user = User.objects.create_superuser("alice", "", "pw-alice-123")
    client.force_login(user)
    return user


@pytest.fixture
def queued(monkeypatch) -> list[tuple[str, Any]]:
    """What the outbox asked a worker to do (the broker is not reached)."""
    sent: list[tuple[str, Any]] = []

    def send_task(name: str, args: Any = None, **kwargs: Any) -> None:
        sent.append((name, args))

    monkeypatch.setattr(xworkmate.celery.app, "send_task", send_task)
    return sent


@pytest.fixture
def outbox(webhook, queued, django_capture_on_commit_callbacks) -> dict[str, Message]:
    """One message of each status: a webhook message failed (HTTP 500), one unknown
    (its worker died mid-send), one sent; a record message pending for the bridge."""
    from xworkmate.delivery.services import sends_begin

    # One at a time: a worker's batch takes every new message waiting.
    webhook.status = 500
    with django_capture_on_commit_callbacks(execute=True):
        failed = _enqueue(target="agent:main:failed", key="k-failed")
    deliver(failed.pk)
    # Its worker died mid-send five minutes ago (so a person may re-send it now).
    unknown = _enqueue(target="agent:main:unknown", key="k-unknown")
    died = timezone.now() - timedelta(minutes=5)
    claimed = sends_begin(new=True, now=died, by="worker", limit=1)
    assert [one.envelope.message_id for one in claimed] == [unknown.pk]
    webhook.status = 200
    with django_capture_on_commit_callbacks(execute=True):
        sent = _enqueue(target="agent:main:sent", key="k-sent")
    deliver(sent.pk)
    pending = _enqueue(target="agent:main:pending", key="k-pending", purpose="plans.run")
    queued.clear()
    rows = {m.target.rsplit(":", 1)[1]: m for m in Message.objects.all()}
    assert {name: m.status for name, m in rows.items()} == {
        "failed": "failed", "unknown": "unknown", "sent": "sent", "pending": "pending"
    }
    assert pending.channel == "record" and rows["sent"].channel == "hook"
    return rows


def _shown(page: str) -> set[str]:
    """The targets of the rows a list page shows."""
    return {t for t in ("failed", "unknown", "sent", "pending") if f">agent:main:{t}</span>" in page}


def test_it_lists_the_outbox_with_its_columns(client, staff, outbox):
    response = client.get(LIST)
    assert response.status_code == 200
    page = response.content.decode()
    assert _shown(page) == {"failed", "unknown", "sent", "pending"}
    for column in (
        "created at", "purpose", "channel", "target session", "status", "attempts",
        "sent, or next attempt", "last error",
    ):
        assert f">{column.capitalize()}<" in page, column
    assert "HTTP 500: ok" in page  # the last error, shortened in the list
    # Read-only: no add button and no delete action, but the re-send action.
    assert "/admin/delivery/message/add/" not in page
    assert 'value="delete_selected"' not in page
    assert 'value="resend_messages"' in page


def test_it_shortens_a_long_last_error_in_the_list(client, staff, outbox):
    Message.objects.filter(pk=outbox["failed"].pk).update(last_error="HTTP 500: " + "x" * 400)
    page = client.get(LIST).content.decode()
    assert "x" * 400 not in page and "HTTP 500: " + "x" * 60 in page


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("status__exact=unknown", {"unknown"}),
        ("status__exact=failed", {"failed"}),
        ("purpose=plans.run", {"pending"}),
        ("channel=hook", {"failed", "unknown", "sent"}),
        ("channel=record", {"pending"}),
        ("q=agent:main:sent", {"sent"}),
        ("q=k-unknown", {"unknown"}),
    ],
)
def test_it_filters_by_status_purpose_and_channel_and_searches_session_and_key(
    client, staff, outbox, query, expected
):
    response = client.get(f"{LIST}?{query}")
    assert response.status_code == 200
    assert _shown(response.content.decode()) == expected


def test_it_shows_one_message_read_only_with_its_attempts(client, staff, outbox):
    message = outbox["failed"]
    response = client.get(f"{LIST}{message.pk}/change/")
    assert response.status_code == 200
    page = html.unescape(response.content.decode())
    assert "正在看：日志" in page and "k-failed" in page and message.body_hash in page
    # The attempt as an inline: number, channel, times, outcome, detail, by, re-sent by.
    for label in ("Number", "Channel", "Started at", "Finished at", "Outcome", "Detail", "By", "Re-sent by"):
        assert f">{label}" in page, label
    assert "HTTP 500: ok" in page and ">worker<" in page
    # Nothing to edit, nothing to save, nothing to delete.
    assert 'name="_save"' not in page and 'name="_continue"' not in page
    assert "/delete/" not in page
    assert client.post(f"{LIST}{message.pk}/change/", {"status": "sent"}).status_code == 403
    assert client.get(f"{LIST}add/").status_code == 403
    assert client.post(f"{LIST}{message.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Message.objects.get(pk=message.pk).status == "failed"


def test_it_re_sends_failed_and_unknown_messages_and_records_who_asked(
    client, staff, outbox, queued, webhook, django_capture_on_commit_callbacks
):
    chosen = [outbox["failed"].pk, outbox["unknown"].pk]
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            LIST, {"action": "resend_messages", "_selected_action": chosen}, follow=True
        )
    assert response.status_code == 200
    assert "2 message(s) queued for re-sending." in response.content.decode()
    # Queued: a worker is asked for each, and they are due for the dispatch job too.
    assert sorted(queued) == sorted((DELIVER_TASK, [pk]) for pk in chosen)
    for message in Message.objects.filter(pk__in=chosen):
        assert message.status == "pending" and message.resend_requested_by == staff
        assert message.next_attempt_at is not None
    # The worker's next attempt records who asked for it; the first task's batch
    # takes both, so the second finds nothing left to send.
    requests_before = len(webhook.requests)
    assert [deliver(pk) for pk in chosen] == [True, False]
    assert len(webhook.requests) == requests_before + 2
    for pk in chosen:
        message = Message.objects.get(pk=pk)
        assert message.status == "sent" and message.resend_requested_by is None
        last = message.attempts.order_by("-number").first()
        assert (last.resent_by, last.outcome, last.by) == (staff, "sent", "worker")


def test_it_does_not_re_send_a_sent_or_pending_message(
    client, staff, outbox, queued, django_capture_on_commit_callbacks
):
    sent, pending, failed = outbox["sent"], outbox["pending"], outbox["failed"]
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            LIST,
            {"action": "resend_messages", "_selected_action": [sent.pk, pending.pk, failed.pk]},
            follow=True,
        )
    page = response.content.decode()
    assert "1 message(s) queued for re-sending." in page
    assert "2 message(s) skipped: only unknown or failed messages are re-sent." in page
    assert queued == [(DELIVER_TASK, [failed.pk])]
    sent_after = Message.objects.get(pk=sent.pk)
    assert (sent_after.status, sent_after.resend_requested_by, sent_after.attempt_count) == ("sent", None, 1)
    assert Message.objects.get(pk=pending.pk).resend_requested_by is None


def test_it_re_sends_a_record_message_by_putting_it_back_for_the_bridge(
    client, staff, queued, db, django_capture_on_commit_callbacks
):
    message = _enqueue(purpose="plans.run")
    Message.objects.filter(pk=message.pk).update(status="failed", last_error="given up")
    with django_capture_on_commit_callbacks(execute=True):
        client.post(LIST, {"action": "resend_messages", "_selected_action": [message.pk]})
    message.refresh_from_db()
    assert (message.status, message.next_attempt_at, message.resend_requested_by) == ("pending", None, staff)
    assert queued == []  # nothing is pushed: the bridge fetches it again


def test_it_reports_a_message_whose_channel_left_the_config_instead_of_failing(
    client, staff, outbox, queued, django_capture_on_commit_callbacks
):
    failed = outbox["failed"]
    Message.objects.filter(pk=failed.pk).update(channel="removed-hook")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            LIST, {"action": "resend_messages", "_selected_action": [failed.pk]}, follow=True
        )
    assert response.status_code == 200
    page = response.content.decode()
    assert "1 message(s) not re-sent: their channel is no longer in the config." in page
    assert "queued for re-sending" not in page
    after = Message.objects.get(pk=failed.pk)
    assert (after.status, after.resend_requested_by) == ("failed", None) and queued == []


def test_it_lets_a_view_only_staff_user_look_but_not_re_send(client, outbox, queued):
    viewer = User.objects.create_user("bob", password="pw-bob-123", is_staff=True)
    viewer.user_permissions.add(
        *Permission.objects.filter(codename__in=("view_message", "view_attempt"))
    )
    client.force_login(viewer)
    page = client.get(LIST).content.decode()
    assert _shown(page) == {"failed", "unknown", "sent", "pending"}
    assert 'value="resend_messages"' not in page
    failed = outbox["failed"]
    assert client.get(f"{LIST}{failed.pk}/change/").status_code == 200
    client.post(LIST, {"action": "resend_messages", "_selected_action": [failed.pk]})
    assert Message.objects.get(pk=failed.pk).status == "failed" and queued == []


def test_it_shows_the_outbox_in_chinese_when_the_user_picks_it(client, staff, outbox):
    client.post("/admin/language/", {"language": "zh-hans", "next": "/admin/"})
    page = client.get(LIST).content.decode()
    for label in (
        "发件箱消息", "创建时间", "用途", "渠道", "目标会话", "状态", "尝试次数",
        "发送时间或下次尝试", "最近错误",
    ):
        assert label in page, label
    assert "重新发送所选消息" in page and ">失败<" in page and ">未知<" in page
    for english in ("Target session", "Next attempt at", "Re-send selected messages"):
        assert english not in page
    detail = client.get(f"{LIST}{outbox['failed'].pk}/change/").content.decode()
    for label in ("投递尝试", "序号", "结束时间", "结果", "详情", "发起方", "重新发送者", "幂等键", "正文"):
        assert label in detail, label
    landing = client.get("/admin/").content.decode()
    assert "消息投递" in landing and "发件箱消息" in landing


def test_it_reports_a_re_send_in_chinese(client, staff, outbox, queued, django_capture_on_commit_callbacks):
    client.post("/admin/language/", {"language": "zh-hans", "next": "/admin/"})
    chosen = [outbox["failed"].pk, outbox["sent"].pk]
    with django_capture_on_commit_callbacks(execute=True):
        page = client.post(
            LIST, {"action": "resend_messages", "_selected_action": chosen}, follow=True
        ).content.decode()
    assert "已将 1 条消息加入重新发送队列。" in page
    assert "跳过了 1 条消息：只有状态为未知或失败的消息才会重新发送。" in page


# The checks of tests/xworkmate/test_admin_chinese.py, for the outbox's pages (its
# PROJECT_APPS does not list the kernel's delivery app).


def _admin_label_sets(model, model_admin) -> list[dict[str, str]]:
    """The labels that show together: the list's columns, the detail page's fields."""
    return [
        {str(n): str(label_for_field(n, model, model_admin)) for n in names}
        for names in (model_admin.list_display, model_admin.get_fields(None))
    ]


def _delivery_admins():
    return [(m, a) for m, a in admin.site._registry.items() if m._meta.app_label == "delivery"]


def test_it_registers_the_outbox_and_the_breakers_among_the_delivery_models():
    # The channels' circuit breakers have a read-only page of their own (D-K33).
    assert sorted(m.__name__ for m, _ in _delivery_admins()) == ["Breaker", "Message"]
    assert Attempt not in admin.site._registry


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_it_gives_every_field_and_column_of_the_outbox_its_own_label(language):
    with translation.override(language):
        for model in (Message, Attempt, Breaker):
            labels: dict[str, str] = {}
            for field in model._meta.get_fields():
                if not hasattr(field, "verbose_name") or field.auto_created:
                    continue
                label = str(field.verbose_name)
                assert label not in labels, (model.__name__, field.name, labels[label])
                labels[label] = field.name
        for model, model_admin in _delivery_admins():
            for shown_together in _admin_label_sets(model, model_admin):
                assert len(set(shown_together.values())) == len(shown_together), shown_together


def test_it_translates_every_column_and_field_of_the_outbox():
    for model, model_admin in _delivery_admins():
        with translation.override("en"):
            english = _admin_label_sets(model, model_admin)
        with translation.override("zh-hans"):
            chinese = _admin_label_sets(model, model_admin)
        for en, zh in zip(english, chinese, strict=True):
            assert [en[n] for n in en if en[n] == zh[n]] == []
    inline = admin.site._registry[Message].inlines[0]
    with translation.override("zh-hans"):
        chinese_inline = [str(Attempt._meta.get_field(f).verbose_name) for f in inline.fields]
    with translation.override("en"):
        english_inline = [str(Attempt._meta.get_field(f).verbose_name) for f in inline.fields]
    assert all(zh != en for zh, en in zip(chinese_inline, english_inline, strict=True))


def test_a_message_not_yet_tried_says_it_has_no_attempts_yet(client, staff, outbox):
    # Issue 22: the attempts' headers over an empty table read as a broken page.
    pending = Message.objects.get(target="agent:main:pending")
    assert not pending.attempts.exists()
    page = client.get(f"{LIST}{pending.pk}/change/").content.decode()
    assert '<p class="help" id="attempts-none">None yet.</p>' in page
    tried = client.get(f"{LIST}{outbox['failed'].pk}/change/").content.decode()
    assert 'id="attempts-none"' not in tried
