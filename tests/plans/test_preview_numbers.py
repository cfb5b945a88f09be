"""The schedule preview with absurd numbers (D-C12) and what the scheduler really does (D-C10)."""

from __future__ import annotations

from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth.models import User

from plans.selectors import MAX_SCHEDULE_MS
from plans.views import _local

# 2026-03-07T08:00:00Z
AFTER = 1772870400000
HOUR = 3600000


@pytest.fixture
def planner(make_client):
    return make_client("plans:read", name="planner")


def preview(planner, **body):
    return planner.post("/api/plans/schedule-preview", body)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"schedule": {"kind": "every", "everyMs": 1e20}, "afterMs": AFTER},
         "schedule.everyMs: must be at most 253402300799999 (got 1e+20)"),
        ({"schedule": {"kind": "every", "everyMs": 10**20}, "afterMs": AFTER},
         "schedule.everyMs: must be at most 253402300799999 (got 100000000000000000000)"),
        ({"schedule": {"kind": "every", "everyMs": 1e30}, "afterMs": AFTER},
         "schedule.everyMs: must be at most 253402300799999 (got 1e+30)"),
        ({"schedule": {"kind": "every", "everyMs": HOUR, "anchorMs": 1e20}, "afterMs": AFTER},
         "schedule.anchorMs: must be at most 253402300799999 (got 1e+20)"),
        ({"schedule": {"kind": "cron", "expr": "0 * * * *", "staggerMs": 1e20}, "afterMs": AFTER},
         "schedule.staggerMs: must be at most 253402300799999 (got 1e+20)"),
        ({"schedule": {"kind": "every", "everyMs": HOUR}, "afterMs": 10**20},
         "afterMs: must be from 0 to 253402300799999"),
        ({"schedule": {"kind": "cron", "expr": "0 9 * * *"}, "afterMs": MAX_SCHEDULE_MS + 1},
         "afterMs: must be from 0 to 253402300799999"),
    ],
)
def test_it_refuses_absurd_numbers_as_invalid_request_naming_the_field(planner, body, message):
    response = planner.post("/api/plans/schedule-preview", body)
    assert response.status_code == 400
    assert response.json() == {"error": {"code": "INVALID_REQUEST", "message": message}}


def test_it_fires_an_every_boundary_exactly_at_after_ms(planner):
    response = preview(planner, schedule={"kind": "every", "everyMs": HOUR, "anchorMs": AFTER - HOUR},
                       afterMs=AFTER, count=3)
    assert response.status_code == 200
    assert [r["ms"] for r in response.json()["runs"]] == [AFTER, AFTER + HOUR, AFTER + 2 * HOUR]


def test_it_floors_a_fractional_every_ms(planner):
    response = preview(planner, schedule={"kind": "every", "everyMs": HOUR + 0.7, "anchorMs": AFTER},
                       afterMs=AFTER, count=2)
    assert response.status_code == 200, response.content
    assert [r["ms"] for r in response.json()["runs"]] == [AFTER + HOUR, AFTER + 2 * HOUR]


def test_it_lists_no_run_past_the_end_of_the_calendar(planner):
    every = MAX_SCHEDULE_MS - AFTER
    response = preview(planner, schedule={"kind": "every", "everyMs": every, "anchorMs": AFTER},
                       afterMs=AFTER, count=3)
    assert response.status_code == 200
    assert response.json() == {"runs": [{"ms": MAX_SCHEDULE_MS, "iso": "9999-12-31T23:59:59.999Z"}]}


@pytest.fixture
def staff(client, db):
    client.force_login(User.objects.create_superuser("pat", "", "pw-pat-12345"))
    return client


@pytest.mark.parametrize("every", ["99999999h", "9" * 5000 + "h", "999999999999999h"])
def test_the_admin_page_shows_a_form_error_for_an_absurd_every(staff, every):
    response = staff.get("/admin/plans/schedule-preview/",
                         {"kind": "every", "every": every, "count": "3"})
    assert response.status_code == 200
    assert "every: too long: at most 70389527h" in response.content.decode()


def test_the_admin_page_shows_utc_only_for_a_run_past_the_calendar_in_the_local_zone():
    assert _local(MAX_SCHEDULE_MS, ZoneInfo("Asia/Shanghai")) == ""
    assert _local(AFTER, ZoneInfo("Asia/Shanghai")) == "2026-03-07 16:00:00 CST"
