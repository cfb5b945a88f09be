"""People's pages for long-run mode: the live board of long tasks, and each task's page.

The board is the task list: it refreshes itself, puts the overdue tasks
first (the watchdog's and the heartbeat's deadlines, computed as the monitors
compute them), and shows for each task how long ago it last showed progress,
its next checkpoint, its last delivery failure with its time and reason, and
how often it was resumed. A task's page adds its transitions, its task log
and the outbox messages sent for it (read through the outbox's selectors),
and, for a person with the change permission, the actions that end a task's
run: blocked, handoff or done, each with a note, each a CSRF-protected POST
that calls one service. Nothing else on these pages writes.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from django.contrib import admin, messages
from django.db.models import Case, IntegerField, Q, QuerySet, Value, When
from django.http import HttpRequest
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.timesince import timesince
from django.utils.translation import gettext as _g
from django.utils.translation import gettext_lazy as _

from longrun.models import LongTask
from longrun.policies.answers import LongrunError
from longrun.policies.states import ACTIVE_STATES, FINISHED_STATES, PROGRESS_STATES
from longrun.policies.timing import OK, PROGRESS, stale_limit, watchdog_verdict
from longrun.selectors import longrun_rules
from longrun.services import task_state_mark
from xworkmate.admin import ActionAnswer, ActionPageMixin, clipped
from xworkmate.auth import Caller
from xworkmate.delivery.selectors import messages_with_ids

# Who may end a task's run from its page (the services do the rest).
CHANGE_PERMISSION = "longrun.change_longtask"
REFRESH_SECONDS = 30
HISTORY_SHOWN = 200


def _local(moment: datetime | None) -> str:
    """A time in the configured zone (longrun.time_zone), as the skill's messages show it."""
    if moment is None:
        return "—"
    return timezone.localtime(moment, longrun_rules().zone).strftime("%Y-%m-%d %H:%M:%S %Z")


def _ago(moment: datetime | None, now: datetime) -> str:
    if moment is None:
        return "—"
    return _g("%(time)s ago") % {"time": timesince(moment, now)}


def _attention_rank(now: datetime) -> Case:
    """2 for a task the monitors would act on now (as watchdog_verdict decides), 1 for
    another active one, 0 for a finished one."""
    stale = longrun_rules().stale
    due = Q(state__in=ACTIVE_STATES) & (
        Q(next_check_at__lte=now) | Q(updated_at__lte=stale_limit(now, stale))
    ) | Q(state__in=PROGRESS_STATES, progress_due_at__lte=now)
    return Case(
        When(due, then=Value(2)),
        When(state__in=ACTIVE_STATES, then=Value(1)),
        default=Value(0),
        output_field=IntegerField(),
    )


class _StoredFilter(admin.SimpleListFilter):
    """The store by default; archived tasks (D-B16) only when asked for."""

    title = _("stored")
    parameter_name = "stored"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [("archived", _("archived")), ("all", _("stored and archived"))]

    def choices(self, changelist: Any) -> Iterator[Any]:
        # The admin names the default choice "All"; here it is the store without the
        # archived tasks, and "All" next to "all" read as the same choice twice.
        for choice in super().choices(changelist):
            if choice["query_string"] == changelist.get_query_string(remove=[self.parameter_name]):
                yield {**choice, "display": _("stored")}
            else:
                yield choice

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "all":
            return queryset
        return queryset.filter(archived_at__isnull=self.value() != "archived")


@admin.register(LongTask)
class LongTaskAdmin(ActionPageMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    change_list_template = "admin/longrun/longtask/change_list.html"
    refresh_seconds = REFRESH_SECONDS
    list_display = (
        "name",
        "state_badge",
        "attention",
        "since_progress",
        "checkpoint",
        "delivery",
        "last_resume_count",
        "origin_session",
    )
    list_filter = ("state", _StoredFilter)
    search_fields = ("name", "origin_session_key", "session_label")
    list_per_page = 100

    def get_queryset(self, request: HttpRequest) -> QuerySet[LongTask]:
        # Annotated before ModelAdmin's ordering, which sorts by the annotation.
        tasks = LongTask.objects.annotate(attention_rank=_attention_rank(timezone.now()))
        return tasks.order_by(*self.get_ordering(request))

    def get_ordering(self, request: HttpRequest) -> list[str]:
        # Overdue first, then the other active tasks, then the finished ones; within
        # each, the longest silent first.
        return ["-attention_rank", "last_progress_at", "id"]

    @admin.display(description=_("state"), ordering="state")
    def state_badge(self, obj: LongTask) -> SafeString:
        return format_html(
            '<span class="xw-state xw-state-{}">{}</span>', obj.state, obj.get_state_display()
        )

    @admin.display(description=_("needs attention"), ordering="-attention_rank")
    def attention(self, obj: LongTask) -> SafeString | str:
        verdict = watchdog_verdict(obj, timezone.now(), longrun_rules().stale)
        if verdict.kind == OK:
            return "—"
        label = _g("progress due") if verdict.kind == PROGRESS else _g("overdue")
        return format_html(
            '<span class="xw-overdue">{}</span> <span class="xw-reason">{}</span>',
            label,
            verdict.reason,
        )

    @admin.display(description=_("target session"), ordering="origin_session_key")
    def origin_session(self, obj: LongTask) -> SafeString | str:
        return clipped(obj.origin_session_key)

    @admin.display(description=_("since visible progress"), ordering="last_progress_at")
    def since_progress(self, obj: LongTask) -> str:
        return _ago(obj.last_progress_at, timezone.now())

    @admin.display(description=_("next check"), ordering="next_check_at")
    def checkpoint(self, obj: LongTask) -> str:
        if obj.next_check_at is not None:
            return _local(obj.next_check_at)
        return obj.next_check or "—"

    @admin.display(description=_("delivery"))
    def delivery(self, obj: LongTask) -> SafeString | str:
        status = obj.last_progress_delivery_status
        if not status:
            return "—"
        if status == "sent":
            return format_html(
                "{} {}",
                obj.get_last_progress_delivery_status_display(),
                _local(obj.last_progress_sent_at),
            )
        return format_html(
            '<span class="xw-error">{} {}</span><br><span class="xw-reason">{}</span>{}',
            obj.get_last_progress_delivery_status_display(),
            _local(obj.last_progress_attempt_at),
            obj.last_progress_send_error,
            format_html(
                "<br>{}",
                _g("%(count)s undelivered in a row") % {"count": obj.undelivered_heartbeats},
            )
            if obj.undelivered_heartbeats
            else "",
        )

    # --- the task's page (xworkmate.admin.ActionPageMixin) ----------------------------------------

    page_template = "admin/longrun/longtask/detail.html"
    page_actions = tuple(f"mark-{state}" for state in FINISHED_STATES)
    action_permission = CHANGE_PERMISSION
    not_found_text = _("Long task not found")

    def page_context(self, request: HttpRequest, obj: LongTask) -> dict[str, Any]:
        can_mark = request.user.has_perm(CHANGE_PERMISSION) and obj.archived_at is None
        return {**_detail_context(obj), "can_mark": can_mark}

    def perform_action(self, request: HttpRequest, obj: LongTask, action: str) -> ActionAnswer:
        state = action.removeprefix("mark-")
        try:
            task_state_mark(
                name=obj.name,
                state=state,
                note=request.POST.get("note", ""),
                by=Caller.for_person(request.user).name,
                now=timezone.now(),
            )
        except LongrunError as refused:
            return messages.ERROR, refused.text
        return messages.SUCCESS, _g("The task is now %(state)s.") % {"state": _STATE_NAMES[state]}


_STATE_NAMES = {
    "blocked": _("blocked"),
    "handoff": _("handoff"),
    "done": _("done"),
}


def _detail_context(task: LongTask) -> dict[str, Any]:
    now = timezone.now()
    rules = longrun_rules()
    verdict = watchdog_verdict(task, now, rules.stale)
    events = list(task.events.order_by("-at", "-id")[:HISTORY_SHOWN])
    # D-B30: the escalation ladder, oldest rung first (the order it was climbed).
    ladder = list(task.ladder.order_by("-at", "-id")[:HISTORY_SHOWN])[::-1]
    message_ids = {event.message_id for event in events if event.message_id is not None}
    message_ids |= {step.message_id for step in ladder if step.message_id is not None}
    if task.heartbeat_message_id is not None:
        message_ids.add(task.heartbeat_message_id)
    return {
        "title": task.name,
        "task": task,
        "verdict": verdict if verdict.kind != OK else None,
        "verdict_is_progress": verdict.kind == PROGRESS,
        "locks": list(task.locks.values_list("origin_session_key", flat=True)),
        "since_progress": _ago(task.last_progress_at, now),
        "times": [
            (_("last visible progress"), _local(task.last_progress_at)),
            (_("progress due at"), _local(task.progress_due_at)),
            (_("checkpoint"), _local(task.next_check_at)),
            (_("last activity"), _local(task.last_activity_at)),
            (_("updated at"), _local(task.updated_at)),
            (_("created at"), _local(task.created_at)),
        ],
        "delivery": [
            (_("last delivery outcome"), task.get_last_progress_delivery_status_display() or "—"),
            (_("last send attempt"), _local(task.last_progress_attempt_at)),
            (_("last progress sent"), _local(task.last_progress_sent_at)),
            (_("last unknown outcome"), _local(task.last_progress_unknown_at)),
            (_("last send error"), task.last_progress_send_error or "—"),
            (_("undelivered heartbeats in a row"), task.undelivered_heartbeats),
        ],
        "transitions": [
            (_local(t.at), t) for t in task.transitions.order_by("-at", "-id")[:HISTORY_SHOWN]
        ],
        "events": [(_local(event.at), event) for event in events],
        "ladder": [(_local(step.at), step) for step in ladder],
        "outbox": [
            {
                "message": message,
                "created": _local(message.created_at),
                "sent": _local(message.sent_at),
                "attempts": [
                    (_local(attempt.started_at), attempt)
                    for attempt in sorted(message.attempts.all(), key=lambda one: one.number)
                ],
            }
            for message in messages_with_ids(message_ids)
        ],
        "end_states": [(state, _STATE_NAMES[state]) for state in FINISHED_STATES],
        "zone": str(getattr(rules.zone, "key", rules.zone)),
    }
