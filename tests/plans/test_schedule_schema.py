"""A schedule's schema says what the engine refuses (D-K15): one shape per kind.

The API documents a schedule with plans.schedule.schema. For schedules whose
expression, zone and time are real ones (what only the engine can judge), the
schema and the engine must agree on every other rule: the kind, trimmed and
in any case; each kind's own properties and no other; their types and bounds.
"""

from __future__ import annotations

import copy
import time
from typing import Any

import jsonschema  # type: ignore[import-untyped]
from hypothesis import given
from hypothesis import strategies as st

from plans.schedule import ScheduleError, validate_schedule
from plans.schedule._time import MAX_MS
from plans.schedule.schema import schedule_schema
from plans.selectors import PreviewRequestError, schedule_preview

MIN_EVERY_MS = 60_000
NOW_MS = int(time.time() * 1000)
FUTURE = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW_MS / 1000 + 86_400))
_OWN = {"cron": ("expr", "tz", "staggerMs"), "every": ("everyMs", "anchorMs"), "at": ("at",)}
_REQUIRED = {"cron": "expr", "every": "everyMs", "at": "at"}

# Real values of what only the engine judges, then values any schema can refuse.
# (An integer-valued float such as 60000.0 is left out: JSON Schema draft 4, which
# OpenAPI 3.0 follows, calls it no integer, while the engine takes it.)
_GOOD: dict[str, list[Any]] = {
    "expr": ["30 2 * * *", "@daily", " 0 9 * * 1 "],
    "tz": ["America/New_York", "", " ", None],
    "staggerMs": [0, 1.5, 300_000, MAX_MS, None],
    "everyMs": [MIN_EVERY_MS, 3_600_000, 60_000.5, MAX_MS],
    "anchorMs": [0, 1_773_100_800_000, MAX_MS, None],
    "at": [FUTURE, f" {FUTURE} ", str(NOW_MS + 86_400_000)],
}
_BAD: dict[str, list[Any]] = {
    "kind": ["weekly", "", "c ron", 3, None],
    "expr": ["", "   ", 5, None],
    "tz": [3, ["UTC"]],
    "staggerMs": [MAX_MS + 1, -1, "5", True],
    "everyMs": [59_999, 1.5, 0, -5, MAX_MS + 1, "60000", True, None],
    "anchorMs": [MAX_MS + 1, -1, 1.5, "0", False],
    "at": ["tomorrow", "", "2026-12-01 09:00", 5, None],
}


@st.composite
def _schedules(draw: st.DrawFn) -> dict[str, Any]:
    """A schedule of one kind, as sent: sometimes with one rule broken."""
    kind = draw(st.sampled_from(sorted(_OWN)))
    spelling = draw(st.sampled_from([kind, kind.upper(), f" {kind.title()}\t", f"\u3000{kind}"]))
    schedule: dict[str, Any] = {"kind": spelling}
    for key in _OWN[kind]:
        if key == _REQUIRED[kind] or draw(st.booleans()):
            schedule[key] = draw(st.sampled_from(_GOOD[key]))
    broken = draw(st.sampled_from(["none", "value", "missing", "foreign", "kind"]))
    if broken == "value":
        key = draw(st.sampled_from(_OWN[kind]))
        schedule[key] = draw(st.sampled_from(_BAD[key]))
    elif broken == "missing":
        del schedule[_REQUIRED[kind]]
    elif broken == "foreign":
        others = sorted({k for keys in _OWN.values() for k in keys} - set(_OWN[kind]))
        schedule[draw(st.sampled_from([*others, "timezone"]))] = 1
    elif broken == "kind":
        schedule["kind"] = draw(st.sampled_from(_BAD["kind"]))
    return schedule


_SCHEDULES = _schedules()


def _json_schema(node: Any) -> Any:
    """OpenAPI 3.0's `nullable` as JSON Schema says it."""
    if isinstance(node, list):
        return [_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _json_schema(value) for key, value in node.items()}
    if node.pop("nullable", False):
        return {"anyOf": [node, {"type": "null"}]}
    return node


def _schema_takes(schedule: dict[str, Any], *, preview: bool) -> bool:
    schema = _json_schema(copy.deepcopy(schedule_schema(min_every_ms=MIN_EVERY_MS, preview=preview)))
    return bool(jsonschema.Draft4Validator(schema).is_valid(schedule))


def _preview_takes(schedule: dict[str, Any]) -> bool:
    try:
        schedule_preview(schedule=schedule, after_ms=NOW_MS, count=1, host_tz="UTC",
                         min_every_ms=MIN_EVERY_MS)
    except (ScheduleError, PreviewRequestError):
        return False
    return True


def _job_takes(schedule: dict[str, Any]) -> bool:
    """What a proposal's schedule must pass (plans.services.proposals._check_schedule, a new plan)."""
    if not _preview_takes(schedule):
        return False
    try:
        validate_schedule(schedule, now_ms=NOW_MS, min_every_ms=MIN_EVERY_MS, host_tz="UTC")
    except ScheduleError:
        return False
    return True


@given(_SCHEDULES)
def test_it_states_the_shape_of_a_jobs_schedule_the_engine_takes(schedule):
    assert _schema_takes(schedule, preview=False) == _job_takes(schedule), schedule


@given(_SCHEDULES)
def test_it_states_the_shape_of_a_schedule_the_preview_takes(schedule):
    assert _schema_takes(schedule, preview=True) == _preview_takes(schedule), schedule


def test_it_has_one_shape_per_kind_each_closed():
    shapes = schedule_schema(min_every_ms=MIN_EVERY_MS, preview=False)["oneOf"]
    assert [s["properties"]["kind"]["description"] for s in shapes] == ["cron", "every", "at"]
    assert all(s["additionalProperties"] is False for s in shapes)
    assert [sorted(s["required"]) for s in shapes] == [
        ["expr", "kind"], ["everyMs", "kind"], ["at", "kind"],
    ]
