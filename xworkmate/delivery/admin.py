"""Admin pages of the outbox: every message the service sent or will send, with its attempts.

Read-only: the services write the outbox (enqueue, claim, the send's
outcome, the bridge's ack). The one thing a person does here is ask for
another send of an `unknown` or `failed` message ("Re-send"); the next
attempt records who asked.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.text import Truncator
from django.utils.translation import gettext_lazy as _

from xworkmate.admin import ReadOnlyMixin
from xworkmate.auth import Caller
from xworkmate.delivery.models import Attempt, Message
from xworkmate.delivery.services import DeliveryError, message_request_resend

# How much of the last error the list shows; the message's page shows all of it.
ERROR_COLUMN_CHARS = 80
RESENDABLE = (Message.UNKNOWN, Message.FAILED)


class AttemptInline(ReadOnlyMixin, admin.TabularInline):  # type: ignore[type-arg]
    model = Attempt
    extra = 0
    fields = (
        "number",
        "channel",
        "started_at",
        "finished_at",
        "outcome",
        "detail",
        "by",
        "resent_by",
    )
    readonly_fields = fields
    ordering = ("number",)


@admin.register(Message)
class MessageAdmin(ReadOnlyMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = (
        "created_at",
        "purpose",
        "channel",
        "target",
        "status",
        "attempt_count",
        "next_attempt_at",
        "sent_at",
        "short_error",
    )
    list_display_links = ("created_at",)
    list_filter = ("status", "purpose", "channel")
    search_fields = ("target", "idempotency_key")
    actions = ("resend_messages",)
    inlines = (AttemptInline,)
    readonly_fields = (
        "purpose",
        "channel",
        "target",
        "status",
        "attempt_count",
        "next_attempt_at",
        "sent_at",
        "last_error",
        "resend_requested_by",
        "idempotency_key",
        "body",
        "body_hash",
        "created_at",
        "updated_at",
    )
    fields = readonly_fields

    @admin.display(description=_("last error"), ordering="last_error")
    def short_error(self, obj: Message) -> str:
        return Truncator(obj.last_error).chars(ERROR_COLUMN_CHARS)

    def has_resend_permission(self, request: HttpRequest) -> bool:
        # A re-send changes the message: the model's change permission, which
        # the read-only pages themselves never grant (ReadOnlyMixin).
        return request.user.has_perm("delivery.change_message")

    @admin.action(description=_("Re-send selected messages"), permissions=("resend",))
    def resend_messages(self, request: HttpRequest, queryset: QuerySet[Message]) -> None:
        user = Caller.for_person(request.user).person
        now = timezone.now()
        queued = skipped = unrouted = 0
        for message in queryset.order_by("pk"):
            if message.status not in RESENDABLE:
                skipped += 1
                continue
            try:
                # It checks the status again, in its UPDATE: a message sent
                # meanwhile by a worker is skipped, not sent again.
                resent = message_request_resend(message=message, user=user, now=now)
            except DeliveryError:  # its channel was removed from the config since
                unrouted += 1
                continue
            if resent:
                queued += 1
            else:
                skipped += 1
        if queued:
            self.message_user(
                request,
                _("%(count)d message(s) queued for re-sending.") % {"count": queued},
                messages.SUCCESS,
            )
        if skipped:
            self.message_user(
                request,
                _("%(count)d message(s) skipped: only unknown or failed messages are re-sent.")
                % {"count": skipped},
                messages.WARNING,
            )
        if unrouted:
            self.message_user(
                request,
                _("%(count)d message(s) not re-sent: their channel is no longer in the config.")
                % {"count": unrouted},
                messages.ERROR,
            )
