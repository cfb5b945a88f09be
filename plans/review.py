"""Reads for the admin's review page: PLAN.md as safe HTML, revision diffs, fire times, outputs.

Everything here only reads. The page shows what a person is about to confirm
(D-C5): the revision's text, what changed since the previous one, when the
proposed schedule fires, and what earlier runs archived (D-C6). Text from
PLAN.md, an agent or the disk is escaped before it becomes HTML.
"""

from __future__ import annotations

import difflib
import errno
import os
import re
import stat
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from pathlib import Path

from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString, mark_safe

from plans.planfile import PlanFileError, is_archive_id, is_archive_timestamp, parse_plan_file
from plans.schedule import ScheduleError, resolve_stagger_ms
from plans.selectors import PreviewRequestError, schedule_preview
from xworkmate.lib.jstime import ms_to_iso

__all__ = [
    "MAX_OUTPUTS",
    "DiffLine",
    "FireTime",
    "FireTimes",
    "Output",
    "PlanText",
    "RunOutputs",
    "fire_times",
    "local_time",
    "plan_text",
    "revision_diff",
    "run_outputs",
    "schedule_zone",
]

# A run directory is listed up to this many names; the page says when there are more.
MAX_OUTPUTS = 50


def local_time(ms: int, zone: tzinfo) -> str:
    """`2026-03-10 09:00:00 CST` in `zone`; "" past the calendar's end in that zone."""
    try:
        moment = datetime.fromtimestamp(ms / 1000, UTC).astimezone(zone)
    except (OverflowError, OSError, ValueError):
        return ""
    return moment.strftime("%Y-%m-%d %H:%M:%S %Z")


def schedule_zone(schedule: Mapping[str, object] | None, host_tz: str) -> str:
    """The zone a schedule fires in: a cron's own `tz`, else the plans' zone (§8.4)."""
    if schedule and str(schedule.get("kind", "")).strip().lower() == "cron":
        tz = schedule.get("tz")
        if isinstance(tz, str) and tz.strip():
            return tz.strip()
    return host_tz


# --- PLAN.md as HTML -----------------------------------------------------------------------------

_HEADING = re.compile(r"(#{1,6})\s+(.*)")
_ITEM = re.compile(r"( *)(?:([-*•])|([0-9]{1,9})\.)\s+(.*)")
# Code spans first: `**` inside backticks is code, not bold.
_INLINE = re.compile(r"`([^`]+)`|\*\*(.+?)\*\*")


def _join(parts: list[str]) -> SafeString:
    # conditional_escape keeps the pieces built by format_html and escapes any
    # plain string, so nothing unescaped can slip through the join.
    return mark_safe("".join(conditional_escape(part) for part in parts))  # noqa: S308


def _inline(text: str) -> SafeString:
    """Escaped text with `code` and **bold**; everything else is literal."""
    parts: list[str] = []
    position = 0
    for match in _INLINE.finditer(text):
        code, strong = match.group(1), match.group(2)
        parts.append(text[position : match.start()])
        if code is not None:
            parts.append(format_html("<code>{}</code>", code))
        else:
            # The lazy match leaves no `**` inside: only code spans remain to mark.
            parts.append(format_html("<strong>{}</strong>", _inline(strong)))
        position = match.end()
    parts.append(text[position:])
    return _join(parts)


def _markdown(text: str) -> SafeString:
    """A small Markdown renderer for PLAN.md: headings, (nested) lists, bold, code, paragraphs.

    It knows only what the template writes (§3.2); any other line is a
    paragraph of escaped text, so an unusual PLAN.md still shows every word.
    """
    out: list[str] = []
    lists: list[tuple[int, str]] = []  # (indent, "ul" | "ol"), each with an open <li>

    def close(to_indent: int = -1) -> None:
        while lists and lists[-1][0] > to_indent:
            out.append(format_html("</li></{}>", lists.pop()[1]))

    for line in text.split("\n"):
        heading = _HEADING.fullmatch(line)
        item = _ITEM.fullmatch(line)
        if not line.strip():
            close()
        elif heading:
            close()
            level = min(len(heading.group(1)) + 1, 6)
            out.append(format_html("<h{}>{}</h{}>", level, _inline(heading.group(2)), level))
        elif item:
            indent, number = len(item.group(1)), item.group(3)
            kind = "ol" if number is not None else "ul"
            close(indent)
            if lists and lists[-1][0] == indent and lists[-1][1] != kind:
                close(indent - 1)
            if lists and lists[-1][0] == indent:
                out.append(format_html("</li><li>{}", _inline(item.group(4))))
            else:
                start = format_html(' start="{}"', int(number)) if number not in (None, "1") else ""
                out.append(format_html("<{}{}><li>{}", kind, start, _inline(item.group(4))))
                lists.append((indent, kind))
        elif lists:
            # An indented continuation line belongs to the open item (R6).
            out.append(format_html("<br>{}", _inline(line.strip())))
        else:
            out.append(format_html("<p>{}</p>", _inline(line)))
    close()
    return _join(out)


@dataclass(frozen=True)
class PlanText:
    entry: SafeString  # the reviewed entry's block
    others: SafeString  # the rest of PLAN.md (text before the entries, other entries)
    other_count: int  # how many other entries
    problem: str  # why the text could not be split into entries ("" when it could)


def plan_text(content: str, task_id: str) -> PlanText:
    """The entry's block of a PLAN.md revision, and the rest, each rendered safely."""
    try:
        parsed = parse_plan_file(content)
    except PlanFileError as exc:
        # A revision is validated when written; this is only reached for odd history.
        return PlanText(_markdown(""), _markdown(content), 0, str(exc))
    mine = next((item for item in parsed if item.entry.task_id == task_id), None)
    if mine is None:
        return PlanText(_markdown(""), _markdown(content), len(parsed), "")
    rest = content[: mine.start] + content[mine.end :]
    return PlanText(_markdown(content[mine.start : mine.end]), _markdown(rest), len(parsed) - 1, "")


# --- diffs ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DiffLine:
    kind: str  # "file", "hunk", "add", "del" or "same": the CSS class
    text: str


def revision_diff(before: str, after: str, *, before_name: str, after_name: str) -> list[DiffLine]:
    """A unified diff of two PLAN.md texts, line by line with its kind (escaped by the template)."""
    lines = difflib.unified_diff(
        before.split("\n") if before else [],
        after.split("\n"),
        fromfile=before_name,
        tofile=after_name,
        lineterm="",
    )
    out = []
    for line in lines:
        if line.startswith(("---", "+++")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        else:
            kind = {"+": "add", "-": "del"}.get(line[:1], "same")
        out.append(DiffLine(kind, line))
    return out


# --- fire times ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FireTime:
    utc: str
    plan_local: str
    reviewer_local: str


@dataclass(frozen=True)
class FireTimes:
    times: list[FireTime]
    error: str  # the schedule's problem, as the scheduler words it; "" when it has none
    # A top-of-hour cron is staggered by an offset derived from the job id, which
    # only exists once confirmed: the times shown are then without it.
    stagger_unknown: bool


def fire_times(
    schedule: Mapping[str, object],
    *,
    now_ms: int,
    count: int,
    host_tz: str,
    min_every_ms: int,
    job_id: str | None,
    plan_zone: tzinfo,
    reviewer_zone: tzinfo,
) -> FireTimes:
    """The next `count` fire times of `schedule` after now, as the scheduler runs them (D-C10)."""
    try:
        runs = schedule_preview(
            schedule=schedule,
            after_ms=now_ms,
            count=count,
            host_tz=host_tz,
            min_every_ms=min_every_ms,
            job_id=job_id,
        )
        stagger = resolve_stagger_ms(schedule) if job_id is None else 0
    except (PreviewRequestError, ScheduleError) as exc:
        return FireTimes([], str(exc), stagger_unknown=False)
    times = [
        FireTime(ms_to_iso(ms), local_time(ms, plan_zone), local_time(ms, reviewer_zone))
        for ms in runs
    ]
    return FireTimes(times, "", stagger_unknown=bool(stagger))


# --- a run's archived outputs (D-C6) -------------------------------------------------------------


@dataclass(frozen=True)
class Output:
    name: str
    size: int | None  # bytes; None for what is not a regular file
    kind: str  # "file", "dir", "link" or "other"


@dataclass(frozen=True)
class RunOutputs:
    files: list[Output]
    more: bool  # the directory holds more than MAX_OUTPUTS names
    problem: str  # why the directory could not be listed; "" when it could or is absent


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


@contextmanager
def _directory_beneath(root: Path, parts: tuple[str, ...]) -> Iterator[int]:
    """A descriptor of root/parts, each part opened without following a symlink."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        for part in parts:
            inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = inner
        yield fd
    finally:
        os.close(fd)


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "link"
    return "other"


def _shown_name(name: str) -> str:
    # A name that is not UTF-8 comes back with surrogate escapes, which no page can encode.
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def run_outputs(workspace: Path, archive_id: str, timestamp: str) -> RunOutputs:
    """Names and sizes under archives/<ARCHIVE_ID>/<TIMESTAMP>/, read with lstat only.

    No symlink is followed, neither on the way down nor in the listing (a link
    is listed as a link); at most MAX_OUTPUTS names, sorted. A missing
    directory is no outputs (yet), not a problem.
    """
    if not is_archive_id(archive_id) or not is_archive_timestamp(timestamp):
        return RunOutputs([], False, "")
    found: list[Output] = []
    more = False
    try:
        with (
            _directory_beneath(workspace, ("archives", archive_id, timestamp)) as fd,
            os.scandir(fd) as entries,
        ):
            for entry in entries:
                if len(found) == MAX_OUTPUTS:
                    more = True
                    break
                info = entry.stat(follow_symlinks=False)
                kind = _kind(info.st_mode)
                found.append(
                    Output(_shown_name(entry.name), info.st_size if kind == "file" else None, kind)
                )
    except FileNotFoundError:
        return RunOutputs([], False, "")
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            return RunOutputs([], False, "not a directory (a symlink is not followed)")
        return RunOutputs([], False, exc.strerror or str(exc))
    return RunOutputs(sorted(found, key=lambda output: output.name), more, "")
