"""The OpenClaw reference corpus (D-C2): all 646 cases, one test each.

Each line of ``cron-ref-cases.jsonl`` holds a schedule, ``afterMs``, ``count`` (and maybe
``jobId``/``hostTz``) and what OpenClaw 2026.2.27 with croner 10.0.1 answered: the runs,
or croner's error, plus the bare ``computeNextRunAtMs`` value, the stagger and, for
``at``, the creation error of ``validateScheduleTimestamp``.

How the corpus chains runs: run 1 is the job-level next run at ``afterMs`` (stagger
included); run k+1 is the same computation with "now" = run k, which is what a job that
just ran computes. ``every`` runs are one interval apart; an ``at`` job has its one run
even when it is in the past (it stays due until it succeeds). ``computeNextRunAtMs`` is
the schedule-level value without stagger; ``retried`` says whether OpenClaw's
"result <= now, retry one second later" branch ran (it never did in the corpus).

D-C2 overrides croner in four places (month rollover, never-firing expressions, the
second pass of a repeated hour, invalid ``at`` strings). None of the 646 cases falls in
one of them: they all pass unchanged with the decided behaviour, so no case is listed as
an exception here. The exceptions have their own tests in test_schedule_decisions.py.

The corpus is kept in the repository, ``tests/plans/data/cron-ref-cases.jsonl``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from plans.schedule import (
    ScheduleError,
    compute_next_run_ms,
    next_runs,
    resolve_stagger_ms,
    stagger_offset_ms,
    validate_schedule,
)
from xworkmate.lib.jstime import ms_to_iso

_HERE = Path(__file__).resolve().parent
_CORPUS = _HERE / "data" / "cron-ref-cases.jsonl"
# The host zone of the machine that produced the corpus did not matter: every case
# without a zone carries ``hostTz``. UTC is used for the rest.
_DEFAULT_HOST_TZ = "UTC"


def _load_cases() -> list[dict[str, Any]]:
    with _CORPUS.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


CASES = _load_cases()


def test_corpus_is_complete() -> None:
    assert len(CASES) == 646
    assert len({case["id"] for case in CASES}) == 646


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_d_c2_reference_case(case: dict[str, Any]) -> None:
    given = case["input"]
    expected = case["expected"]
    schedule = given["schedule"]
    host_tz = given.get("hostTz", _DEFAULT_HOST_TZ)
    job_id = given.get("jobId")

    if expected["error"] is not None:
        with pytest.raises(ScheduleError) as caught:
            next_runs(schedule, after_ms=given["afterMs"], count=given["count"], host_tz=host_tz)
        assert str(caught.value) == expected["error"]
        assert expected["runs"] == []
        with pytest.raises(ScheduleError, match=r"^CronPattern: "):
            validate_schedule(schedule, now_ms=given["afterMs"], host_tz=host_tz)
        return

    runs = next_runs(
        schedule,
        after_ms=given["afterMs"],
        count=given["count"],
        host_tz=host_tz,
        job_id=job_id,
    )
    assert runs == [run["ms"] for run in expected["runs"]]
    if schedule["kind"] == "cron":  # every valid corpus expression may also be created
        validate_schedule(schedule, now_ms=given["afterMs"], host_tz=host_tz)
    assert [ms_to_iso(ms) for ms in runs] == [run["iso"] for run in expected["runs"]]

    # The schedule-level value, without the job's stagger.
    bare = compute_next_run_ms(schedule, now_ms=given["afterMs"], host_tz=host_tz)
    assert bare == expected["computeNextRunAtMs"]

    if "staggerMs" in expected:
        stagger = resolve_stagger_ms(schedule)
        assert stagger == expected["staggerMs"]
        assert stagger_offset_ms(job_id, stagger) == expected["staggerOffsetMs"]
        staggered = compute_next_run_ms(
            schedule, now_ms=given["afterMs"], host_tz=host_tz, job_id=job_id
        )
        assert staggered == expected["runs"][0]["ms"]

    if "createError" in expected:  # ``at`` cases: OpenClaw's creation check
        if expected["createError"] is None:
            validate_schedule(schedule, now_ms=given["afterMs"], host_tz=host_tz)
        else:
            with pytest.raises(ScheduleError) as caught:
                validate_schedule(schedule, now_ms=given["afterMs"], host_tz=host_tz)
            assert str(caught.value) == expected["createError"]
