"""What the plans admin pages share: the plans' zone, a job's display status and next run."""

from __future__ import annotations

from datetime import datetime, tzinfo

from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from plans.conf import plans_conf
from plans.models import Entry, Job
from plans.policies import display_status
from plans.review import local_time, schedule_zone
from xworkmate.lib.timezones import TimeZoneError, get_zone

# §6's display statuses; the Chinese catalogue says them as policies.display_status does.
_STATUS_LABELS = {
    "disabled": pgettext_lazy("job display status", "paused"),
    "running": pgettext_lazy("job display status", "running"),
    "done": pgettext_lazy("job display status", "done"),
    "failed": pgettext_lazy("job display status", "failed"),
    "skipped": pgettext_lazy("job display status", "skipped"),
    "pending": pgettext_lazy("job display status", "pending"),
}


def _host_tz() -> str:
    zone: str = plans_conf().time_zone
    return zone


def _zone(name: str) -> tzinfo:
    """The named zone, or the plans' zone for a name the zone database no longer has."""
    try:
        return get_zone(name)
    except TimeZoneError:
        return get_zone(_host_tz())


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def _live(job: Job | None) -> Job | None:
    """The job while it is on the schedule; a cancelled job keeps its row and runs only."""
    return job if job is not None and job.removed_at is None else None


def _status(job: Job | None, entry: Entry) -> SafeString:
    """§6's display status of the entry's job; without a job, what the entry waits for."""
    live = _live(job)
    if live is None:
        if job is not None:
            return format_html('<span class="xw-status xw-status-removed">{}</span>', _("removed"))
        text = _("awaiting confirmation") if entry.state == Entry.AWAITING else "—"
        return format_html('<span class="xw-status xw-status-none">{}</span>', text)
    code, _chinese = display_status(
        enabled=live.enabled, running_at_ms=live.running_at_ms, last_run_status=live.last_run_status
    )
    if code == "done" and live.next_run_at is not None:
        # A recurring job whose last run went well is not finished: it waits for its
        # next run (§6's "done" reads as "nothing more to come" to a person).
        return format_html(
            '<span class="xw-status xw-status-pending" title="{}">{}</span>',
            _("last run: done"),
            _STATUS_LABELS["pending"],
        )
    return format_html('<span class="xw-status xw-status-{}">{}</span>', code, _STATUS_LABELS[code])


def _next_run(job: Job | None) -> str:
    """The job's next run in the zone its schedule fires in, or "—"."""
    live = _live(job)
    if live is None or live.next_run_at is None:
        return "—"
    zone = _zone(schedule_zone(live.schedule, _host_tz()))
    return local_time(_ms(live.next_run_at), zone) or "—"


def _review_url(entry: Entry) -> str:
    return reverse("admin:plans_entry_change", args=[entry.pk])
