"""Admin pages of the plans app that are not model pages: the schedule preview."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import translation
from django.utils.translation import gettext_lazy as _

from plans.conf import plans_conf
from plans.croner_text import croner_text
from plans.schedule import ScheduleError, describe_schedule
from plans.selectors import (
    MAX_PREVIEW_RUNS,
    MAX_SCHEDULE_MS,
    PreviewRequestError,
    schedule_preview,
)
from xworkmate.lib.durations import (
    DURATION_RULE,
    DurationError,
    DurationTooLong,
    parse_duration,
)
from xworkmate.lib.jstime import ms_to_iso
from xworkmate.lib.timezones import get_zone


class SchedulePreviewForm(forms.Form):
    kind = forms.ChoiceField(
        label=_("kind"),
        choices=[("cron", "cron"), ("every", "every"), ("at", "at")],
    )
    expr = forms.CharField(label=_("cron expression"), required=False, initial="30 2 * * *")
    tz = forms.CharField(label=_("time zone"), required=False, help_text=_("IANA name"))
    every = forms.CharField(
        label=_("every"), required=False, help_text=_("a duration like 90s, 3m, 2h or 1h30m")
    )
    at = forms.CharField(label=_("at"), required=False, help_text="2026-12-01T09:00:00+08:00")
    count = forms.IntegerField(label=_("runs"), min_value=1, max_value=MAX_PREVIEW_RUNS, initial=10)

    def clean_every(self) -> str:
        value: str = self.cleaned_data.get("every", "")
        if value and self.data.get("kind") == "every":
            try:
                millis = _duration_ms(value)
            except DurationTooLong as exc:
                raise forms.ValidationError(_too_long()) from exc
            except DurationError as exc:
                raise forms.ValidationError(f"every: {exc}") from exc
            except (OverflowError, ValueError) as exc:
                # More hours than a timedelta (or int()) holds: absurd, like 1e20 ms.
                raise forms.ValidationError(_too_long()) from exc
            if millis > MAX_SCHEDULE_MS:
                raise forms.ValidationError(_too_long())
        return value

    def schedule(self) -> dict[str, Any]:
        data = self.cleaned_data
        kind = data["kind"]
        if kind == "cron":
            out: dict[str, Any] = {"kind": "cron", "expr": data["expr"]}
            if data["tz"]:
                out["tz"] = data["tz"]
            return out
        if kind == "every":
            if not data["every"]:
                raise ScheduleError(f"every: required, {DURATION_RULE}")
            return {"kind": "every", "everyMs": _duration_ms(data["every"]), "anchorMs": _now_ms()}
        return {"kind": "at", "at": data["at"]}


def _too_long() -> str:
    # The bound of the API's everyMs (D-C12), in the unit people type here.
    return f"every: too long: at most {MAX_SCHEDULE_MS // 3_600_000}h"


def _duration_ms(value: str) -> int:
    return int(parse_duration(value) / timedelta(milliseconds=1))


def _local(ms: int, zone: tzinfo) -> str:
    try:
        local = datetime.fromtimestamp(ms / 1000, UTC).astimezone(zone)
    except OverflowError:
        return ""  # past 9999-12-31 in this zone: the UTC time is all there is
    return local.strftime("%Y-%m-%d %H:%M:%S %Z")


def _now_ms() -> int:
    return int(time.time() * 1000)


def schedule_preview_view(request: HttpRequest) -> HttpResponse:
    """Type a schedule, see what it means and when it fires (GET: bookmarkable)."""
    form = SchedulePreviewForm(request.GET or None)
    context: dict[str, Any] = {
        **admin.site.each_context(request),
        "title": _("Schedule preview"),
        "form": form,
    }
    config = settings.XWORKMATE
    host_tz = plans_conf(config).time_zone
    if form.is_bound and form.is_valid():
        lang = "zh" if (translation.get_language() or "").startswith("zh") else "en"
        try:
            schedule = form.schedule()
            description = describe_schedule(schedule, lang=lang, host_tz=host_tz)
            runs = schedule_preview(
                schedule=schedule,
                after_ms=_now_ms(),
                count=form.cleaned_data["count"],
                host_tz=host_tz,
                min_every_ms=int(plans_conf(config).min_every.total_seconds() * 1000),
            )
        except (PreviewRequestError, ScheduleError) as exc:
            context["error"] = str(exc)
            # In another language, what croner said in it, the original beside it.
            context["error_translated"] = croner_text(str(exc))
        else:
            zone = get_zone(str(schedule.get("tz") or host_tz))
            context["description"] = description
            context["zone"] = str(zone)
            context["runs"] = [{"iso": ms_to_iso(ms), "local": _local(ms, zone)} for ms in runs]
    return render(request, "admin/plans/schedule_preview.html", context)
