"""Reads of the plans app: the schedule preview, and plans scoped to their caller."""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping

from django.db.models import QuerySet

from plans.models import Entry, Job, Revision, Run
from plans.schedule import next_runs, parse_at_ms, validate_schedule
from plans.schedule._time import MAX_MS

MAX_PREVIEW_RUNS = 50

# The last instant the engine's calendar holds (9999-12-31T23:59:59.999Z). A
# larger interval, anchor or stagger is no schedule anyone means (D-C12).
MAX_SCHEDULE_MS = MAX_MS
_BOUNDED_NUMBERS = ("everyMs", "anchorMs", "staggerMs")


class PreviewRequestError(ValueError):
    """A number of the request that no schedule can use; names the field (D-C12)."""

    def __init__(self, field: str, rule: str) -> None:
        super().__init__(f"{field}: {rule}")
        self.field = field


def _number(value: object) -> int | float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def _check_numbers(schedule: Mapping[str, object], after_ms: int) -> None:
    if not 0 <= after_ms <= MAX_SCHEDULE_MS:
        raise PreviewRequestError("afterMs", f"must be from 0 to {MAX_SCHEDULE_MS}")
    for name in _BOUNDED_NUMBERS:
        number = _number(schedule.get(name))
        if number is not None and number > MAX_SCHEDULE_MS:
            raise PreviewRequestError(
                f"schedule.{name}", f"must be at most {MAX_SCHEDULE_MS} (got {number!r})"
            )


def _as_scheduled(schedule: Mapping[str, object]) -> Mapping[str, object]:
    """The schedule as the scheduler reads it: a fractional everyMs is floored (D-C10)."""
    if str(schedule.get("kind", "")).strip().lower() != "every":
        return schedule
    every = _number(schedule.get("everyMs"))
    if isinstance(every, float) and math.isfinite(every) and not every.is_integer():
        return {**schedule, "everyMs": math.floor(every)}
    return schedule


def schedule_preview(
    *,
    schedule: Mapping[str, object],
    after_ms: int,
    count: int,
    host_tz: str,
    min_every_ms: int,
    job_id: str | None = None,
) -> list[int]:
    """The next `count` fire times after `after_ms`, exactly as OpenClaw would run them.

    The schedule is validated as for creating a job, except that an `at` in the
    past is not an error here: it simply has no future run, so the answer is [].
    As the scheduler does (D-C10), an `every` boundary exactly at `after_ms`
    fires at `after_ms` and a fractional `everyMs` is floored. Runs past the
    year 9999 are not listed.

    Raises PreviewRequestError for an absurd number (D-C12), else
    plans.schedule.ScheduleError with the engine's (croner-style) message.
    """
    _check_numbers(schedule, after_ms)
    schedule = _as_scheduled(schedule)
    if str(schedule.get("kind", "")).strip().lower() == "at":
        at_ms = parse_at_ms(schedule.get("at"))
        if at_ms <= after_ms:
            return []
    validate_schedule(schedule, now_ms=after_ms, min_every_ms=min_every_ms, host_tz=host_tz)
    runs = next_runs(schedule, after_ms=after_ms, count=count, host_tz=host_tz, job_id=job_id)
    return [ms for ms in runs if ms <= MAX_SCHEDULE_MS]


# --- plans, as the API and the skill see them -------------------------------------------------

MAX_RUNS_PAGE = 200
DEFAULT_RUNS_PAGE = 50


def entries_visible_to(session_key: str | None) -> QuerySet[Entry]:
    """The plans a caller may see: an agent key its own session's, the bridge all (None)."""
    entries = Entry.objects.select_related("plan", "revision", "confirmed_revision")
    if session_key is not None:
        entries = entries.filter(plan__session_key=session_key)
    return entries.order_by("-updated_at", "-id")


def entry_visible_to(task_id: str, session_key: str | None) -> Entry | None:
    try:
        parsed = uuid.UUID(str(task_id))
    except ValueError:
        return None
    return entries_visible_to(session_key).filter(task_id=parsed).first()


def job_of(entry: Entry) -> Job | None:
    # The confirmation it runs comes along: what it binds is shown with it (D-C25).
    return Job.objects.filter(entry=entry).select_related("confirmation").first()


def jobs_of(entries: list[Entry]) -> dict[int, Job]:
    """The jobs of several entries, by entry id, in one query."""
    jobs = Job.objects.filter(entry__in=entries).select_related("confirmation")
    return {job.entry_id: job for job in jobs}


def runs_page(
    job: Job, *, limit: int, offset: int, newest_first: bool = True
) -> tuple[list[Run], int]:
    runs = Run.objects.filter(job=job).select_related("revision")
    order = ("-fire_at_ms", "-id") if newest_first else ("fire_at_ms", "id")
    return list(runs.order_by(*order)[offset : offset + limit]), runs.count()


def previous_revision(revision: Revision) -> Revision | None:
    return (
        Revision.objects.filter(plan_id=revision.plan_id, number__lt=revision.number)
        .order_by("-number")
        .first()
    )
