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
from django.utils.formats import date_format
from django.utils.safestring import SafeString
from django.utils.text import Truncator
from django.utils.translation import gettext_lazy as _

from xworkmate.admin import ReadOnlyMixin, clipped
from xworkmate.auth import Caller
from xworkmate.delivery.models import Attempt, Breaker, Message
from xworkmate.delivery.services import DeliveryError, channel_deduplicates, message_request_resend

# How much of the last error the list shows; the message's page shows all of it.
ERROR_COLUMN_CHARS = 80
RESENDABLE = (Message.UNKNOWN, Message.FAILED)


class AttemptInline(ReadOnlyMixin, admin.TabularInline):  # type: ignore[type-arg]
    model = Attempt
    extra = 0
    template = "admin/delivery/attempt_inline.html"
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
        "short_target",
        "status",
        "attempt_count",
        "sent_or_next",
        "short_error",
    )
    list_display_links = ("created_at",)
    list_filter = ("status", "purpose", "channel")
    search_fields = ("target", "idempotency_key")
    actions = ("resend_messages", "resend_messages_accepting_doubles")
    inlines = (AttemptInline,)
    readonly_fields = (
        "purpose",
        "channel",
        "target",
        "status",
        "what_happened",
        "attempt_count",
        "next_attempt_at",
        "sent_at",
        "last_error",
        "routed_from",
        "route_note",
        "resend_requested_by",
        "claimed_by",
        "claim_expires_at",
        "idempotency_key",
        "body",
        "body_hash",
        "created_at",
        "updated_at",
    )
    fields = readonly_fields

    @admin.display(description=_("target session"), ordering="target")
    def short_target(self, obj: Message) -> SafeString | str:
        return clipped(obj.target)

    # One column for the two times: a message is either sent or waiting for an
    # attempt, never both, and the list must leave room for its status.
    @admin.display(description=_("sent, or next attempt"))
    def sent_or_next(self, obj: Message) -> str:
        moment = obj.sent_at or obj.next_attempt_at
        if moment is None:
            return "—"
        text = date_format(timezone.localtime(moment), "DATETIME_FORMAT")
        return text if obj.sent_at else _("next: %(time)s") % {"time": text}

    @admin.display(description=_("last error"), ordering="last_error")
    def short_error(self, obj: Message) -> str:
        return Truncator(obj.last_error).chars(ERROR_COLUMN_CHARS)

    @admin.display(description=_("what happened"))
    def what_happened(self, obj: Message) -> str:
        """The message's state in words an operator acts on (D-K30)."""
        if obj.status != Message.UNKNOWN:
            return "-"
        try:
            deduplicates = channel_deduplicates(obj.channel)
        except DeliveryError:
            return str(_("Its channel is no longer in the config."))
        if deduplicates:
            return str(
                _(
                    "A send began and no answer was recorded: it may or may not have "
                    "arrived. Its receiver de-duplicates by idempotency key, so it is sent "
                    "again by itself after the unknown cooldown."
                )
            )
        return str(
            _(
                "A send began and no answer was recorded: it may or may not have arrived. "
                "This channel does not de-duplicate, so nothing sends it again by itself. "
                "Check the session; if it never arrived, re-send it with \"Re-send, "
                "accepting that unknown ones may arrive twice\"."
            )
        )

    def has_resend_permission(self, request: HttpRequest) -> bool:
        # A re-send changes the message: the model's change permission, which
        # the read-only pages themselves never grant (ReadOnlyMixin).
        return request.user.has_perm("delivery.change_message")

    @admin.action(description=_("Re-send selected messages"), permissions=("resend",))
    def resend_messages(self, request: HttpRequest, queryset: QuerySet[Message]) -> None:
        self._resend(request, queryset, accept_doubles=False)

    @admin.action(
        description=_("Re-send, accepting that unknown ones may arrive twice"),
        permissions=("resend",),
    )
    def resend_messages_accepting_doubles(
        self, request: HttpRequest, queryset: QuerySet[Message]
    ) -> None:
        self._resend(request, queryset, accept_doubles=True)

    def _resend(
        self, request: HttpRequest, queryset: QuerySet[Message], *, accept_doubles: bool
    ) -> None:
        user = Caller.for_person(request.user).person
        now = timezone.now()
        queued = skipped = unrouted = doubles = 0
        for message in queryset.order_by("pk"):
            if message.status not in RESENDABLE:
                skipped += 1
                continue
            try:
                may_double = message.status == Message.UNKNOWN and not channel_deduplicates(
                    message.channel
                )
            except DeliveryError:  # its channel was removed from the config since
                unrouted += 1
                continue
            if may_double and not accept_doubles:
                # It may have arrived, and its receiver would not know a second one
                # (D-K30): only the action that says so re-sends it.
                doubles += 1
                continue
            try:
                # It checks the status again, in its UPDATE: a message sent
                # meanwhile by a worker is skipped, not sent again.
                resent = message_request_resend(message=message, user=user, now=now)
            except DeliveryError:
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
        if doubles:
            self.message_user(
                request,
                _(
                    "%(count)d unknown message(s) not re-sent: they may have arrived, and "
                    "their channel does not de-duplicate, so a re-send may deliver them "
                    "twice. Use \"Re-send, accepting that unknown ones may arrive twice\" "
                    "once you have checked."
                )
                % {"count": doubles},
                messages.WARNING,
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


@admin.register(Breaker)
class BreakerAdmin(ReadOnlyMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    """Each pushed channel's circuit breaker (D-K33): read-only; the outbox opens,
    probes and closes it from the sends' answers."""

    list_display = (
        "channel",
        "state",
        "failures",
        "opened_at",
        "probe_after",
        "times_opened",
        "changed_at",
        "short_note",
    )
    list_filter = ("state",)
    readonly_fields = (
        "channel",
        "state",
        "failures",
        "last_error",
        "last_target",
        "opened_at",
        "probe_after",
        "probe_message_id",
        "times_opened",
        "changed_at",
        "note",
    )
    fields = readonly_fields

    @admin.display(description=_("what happened last"))
    def short_note(self, obj: Breaker) -> str:
        return Truncator(obj.note).chars(ERROR_COLUMN_CHARS * 2)
