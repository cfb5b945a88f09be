"""The review page's actions: each is a POST that calls one service and reports its answer."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.http import HttpRequest
from django.utils import timezone
from django.utils.translation import gettext as _g

from plans.admin._common import _next_run
from plans.models import Entry
from plans.services import (
    PlanError,
    entry_cancel,
    entry_confirm,
    entry_request_changes,
    job_pause,
    job_resume,
    job_run_now,
)
from xworkmate.admin import ActionAnswer
from xworkmate.auth import Caller


def _revision_posted(request: HttpRequest) -> int:
    raw = request.POST.get("revision", "")
    if not raw.isdigit() or len(raw) > 9:
        raise PlanError("revision: required, the number of the revision shown on the page")
    return int(raw)


def _confirm(request: HttpRequest, entry: Entry) -> ActionAnswer:
    number = _revision_posted(request)
    job = entry_confirm(
        task_id=str(entry.task_id),
        revision=number,
        user=Caller.for_person(request.user).person,
        now=timezone.now(),
    )
    text = _g("Revision %(number)s is confirmed; the job is on the schedule. Next run: %(next)s.")
    return messages.SUCCESS, text % {"number": number, "next": _next_run(job)}


def _request_changes(request: HttpRequest, entry: Entry) -> ActionAnswer:
    number = _revision_posted(request)
    entry_request_changes(
        task_id=str(entry.task_id),
        revision=number,
        comment=request.POST.get("comment", ""),
        user=Caller.for_person(request.user).person,
        now=timezone.now(),
    )
    text = _g("Your change request for revision %(number)s is recorded; nothing is scheduled.")
    return messages.SUCCESS, text % {"number": number}


def _pause(request: HttpRequest, entry: Entry) -> ActionAnswer:
    job_pause(task_id=str(entry.task_id), now=timezone.now())
    return messages.SUCCESS, _g("The job is paused; PLAN.md is unchanged.")


def _resume(request: HttpRequest, entry: Entry) -> ActionAnswer:
    job = job_resume(task_id=str(entry.task_id), now=timezone.now())
    return messages.SUCCESS, _g("The job is resumed. Next run: %(next)s.") % {
        "next": _next_run(job)
    }


def _run_now(request: HttpRequest, entry: Entry) -> ActionAnswer:
    answer = job_run_now(task_id=str(entry.task_id), mode="force", now=timezone.now())
    if answer.get("ran"):
        return messages.SUCCESS, _g("A run has started; its outcome shows under Runs.")
    return messages.WARNING, _g("Not run: %(reason)s.") % {"reason": answer.get("reason", "")}


def _cancel(request: HttpRequest, entry: Entry) -> ActionAnswer:
    entry_cancel(
        task_id=str(entry.task_id),
        turn_id="",
        written_by=Caller.for_person(request.user).name,
        now=timezone.now(),
    )
    return messages.SUCCESS, _g(
        "The plan is cancelled: PLAN.md says Status: Cancelled and the job is off the schedule."
    )


_ACTIONS: dict[str, Callable[[HttpRequest, Entry], ActionAnswer]] = {
    "confirm": _confirm,
    "request-changes": _request_changes,
    "pause": _pause,
    "resume": _resume,
    "run-now": _run_now,
    "cancel": _cancel,
}
