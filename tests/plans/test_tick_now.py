"""`manage.py plans tick --now <ISO time>` (issue 23 A8): a time control, never in production."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from plans.models import Run
from tests.conftest import configure
from tests.plans.test_scheduler import FIRST_FIRE, _ms, job  # noqa: F401 (the fixture)

pytestmark = pytest.mark.django_db


def _tick(*args: str) -> str:
    out = StringIO()
    call_command("plans", "tick", *args, stdout=out)
    return out.getvalue()


def test_it_ticks_at_the_moment_named_when_the_test_settings_allow_it(job, settings):  # noqa: F811
    settings.PLANS_TIME_CONTROL = True
    assert _tick("--now", "2026-03-10T08:59:59+08:00").startswith("started 0 run(s)")
    assert not Run.objects.exists()
    assert _tick("--now", "2026-03-10T01:00:03Z").startswith("started 1 run(s)")
    run = Run.objects.get()
    assert run.fire_at_ms == _ms(FIRST_FIRE)
    assert run.run_at_ms == _ms(FIRST_FIRE + timedelta(seconds=3))
    assert run.archive_timestamp == "2026-03-10-09-00-03"  # the named moment, in the plan zone


def test_service_debug_allows_it_too(job, settings):  # noqa: F811
    configure(settings, "service", debug=True)
    assert _tick("--now", "2026-03-10T09:00:03+08:00").startswith("started 1 run(s)")


@pytest.mark.parametrize(
    ("allowed", "given", "message"),
    [
        (False, "2026-03-10T01:00:03Z",
         "--now: refused: moving the scheduler's clock needs service.debug = true "
         "(a test or staging deployment), never production"),
        (True, "2026-03-10T09:00:03",
         "--now: must be an ISO 8601 time with its UTC offset, like 2026-12-03T09:00:00+08:00 "
         "or 2026-12-03T01:00:00Z (got '2026-03-10T09:00:03')"),
        (True, "tomorrow", "--now: must be an ISO 8601 time with its UTC offset, like "
         "2026-12-03T09:00:00+08:00 or 2026-12-03T01:00:00Z (got 'tomorrow')"),
    ],
)
def test_it_refuses_without_permission_or_with_a_time_that_has_no_zone_and_runs_nothing(
    job, settings, allowed, given, message  # noqa: F811
):
    settings.PLANS_TIME_CONTROL = allowed
    with pytest.raises(CommandError) as refused:
        _tick("--now", given)
    assert str(refused.value) == message
    assert not Run.objects.exists()
