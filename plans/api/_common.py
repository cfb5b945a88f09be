"""What the plans API's views share: the visible plan, its answer, paging, refusals."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from django.utils.translation import gettext_lazy
from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.request import Request

from plans.models import Entry, Job
from plans.selectors import DEFAULT_RUNS_PAGE, MAX_RUNS_PAGE, entry_visible_to, job_of
from plans.wire import entry_json
from xworkmate.api_errors import InputErrorAPIView
from xworkmate.auth import HasScope, caller_of
from xworkmate.lib.paging import Page
from xworkmate.paging import page_of, page_parameters


def _visible_entry(request: Request, task_id: str) -> Entry:
    entry = entry_visible_to(task_id, caller_of(request).confined_to)
    if entry is None:
        raise NotFound("Plan not found")
    return entry


# The contract's one message for any bad paging parameter (§6, case 92).
_BAD_PAGE = gettext_lazy("Invalid query parameter `{name}`")


def _page(request: Request) -> Page:
    return page_of(
        request, default=DEFAULT_RUNS_PAGE, maximum=MAX_RUNS_PAGE, refusal=str(_BAD_PAGE)
    )


_PAGE_PARAMETERS = page_parameters(default=DEFAULT_RUNS_PAGE, maximum=MAX_RUNS_PAGE)


def _plan_answer(request: Request, entry: Entry) -> dict[str, Any]:
    """One plan as it is now (a service may have changed it since it was read)."""
    fresh = entry_visible_to(str(entry.task_id), None)
    if fresh is None:
        raise NotFound("Plan not found")
    return _plan_json(request, fresh, job_of(fresh))


def _plan_json(request: Request, entry: Entry, job: Job | None) -> dict[str, Any]:
    url = request.build_absolute_uri(reverse("admin:plans_entry_change", args=[entry.pk]))
    return entry_json(entry, job, review_url=url)


class _PlansView(InputErrorAPIView):
    """A plans endpoint: the services' refusals answer with their code and rule (D-C16)."""

    permission_classes = [HasScope]
    required_scope = "plans:read"


_Errors = dict[int, str | tuple[str, tuple[str, ...]]]


_WRITE_ERRORS: _Errors = {
    400: ("a field breaks its rule (named), or the schedule is refused", ("INVALID_REQUEST",)),
    403: "the key lacks `plans:write`, or an agent key names another session or turn",
    409: (
        "BLOCKED (the PLAN.md write did not verify) or REFUSED (the gate's rule, named)",
        ("BLOCKED", "REFUSED", "CONFLICT"),
    ),
    411: "",
    415: "",
}


_READ_ERRORS: _Errors = {
    403: "the key lacks `plans:read`",
    404: "Plan not found (or not this key's)",
}


def _documented(
    serializer: type[serializers.Serializer[Any]], component: str, *required: str
) -> type[serializers.Serializer[Any]]:
    """The request as the schema states it for the bridge's keys, which must send `required`.

    An agent key may leave those out (its own session and run are used, D-C14);
    the view validates with `serializer` itself, where they are optional.
    """

    class Documented(serializer):  # type: ignore[valid-type,misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            for name in required:
                self.fields[name].required = True

    Documented.__name__ = component
    documented: type[serializers.Serializer[Any]] = extend_schema_serializer(
        component_name=component
    )(Documented)
    return documented
