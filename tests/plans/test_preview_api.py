"""POST /api/plans/schedule-preview and the admin's schedule preview page."""

from __future__ import annotations

import html
import itertools
import re

import pytest
from django.contrib.auth.models import User

from plans.schedule import stagger_offset_ms

# 2026-03-07T08:00:00Z: the day before New York's spring-forward (2026-03-08).
AFTER = 1772870400000


@pytest.fixture
def planner(make_client):
    return make_client("plans:read", name="planner")


def test_it_previews_a_cron_schedule_across_spring_forward(planner):
    response = planner.post(
        "/api/plans/schedule-preview",
        {"schedule": {"kind": "cron", "expr": "30 2 * * *", "tz": "America/New_York"},
         "afterMs": AFTER, "count": 3},
    )
    assert response.status_code == 200
    # 02:30 does not exist on 2026-03-08 in New York: croner runs it shifted by the gap (03:30 EDT).
    assert response.json() == {"runs": [
        {"ms": 1772868600000 + 86400000, "iso": "2026-03-08T07:30:00.000Z"},
        {"ms": 1773037800000, "iso": "2026-03-09T06:30:00.000Z"},
        {"ms": 1773124200000, "iso": "2026-03-10T06:30:00.000Z"},
    ]}


def test_it_previews_every_with_its_anchor_and_defaults_to_ten_runs(planner):
    response = planner.post(
        "/api/plans/schedule-preview",
        {"schedule": {"kind": "every", "everyMs": 3600000, "anchorMs": AFTER - 900000},
         "afterMs": AFTER},
    )
    runs = [r["ms"] for r in response.json()["runs"]]
    assert len(runs) == 10
    assert runs[0] == AFTER + 2700000
    assert {b - a for a, b in itertools.pairwise(runs)} == {3600000}


def test_it_uses_the_job_id_for_the_top_of_hour_stagger(planner):
    body = {"schedule": {"kind": "cron", "expr": "0 * * * *", "tz": "UTC"}, "afterMs": AFTER,
            "count": 1}
    exact = planner.post("/api/plans/schedule-preview", body).json()["runs"][0]["ms"]
    assert exact == AFTER + 3600000
    staggered = planner.post("/api/plans/schedule-preview", body | {"jobId": "job-42"}).json()
    # The default 5-minute stagger for top-of-hour expressions: the hour that
    # began at AFTER still fires, offset into its window by the job's hash.
    offset = stagger_offset_ms("job-42", 300000)
    assert 0 < offset < 300000
    assert staggered["runs"][0]["ms"] == AFTER + offset
    explicit = {**body, "schedule": {**body["schedule"], "staggerMs": 0}, "jobId": "job-42"}
    assert planner.post("/api/plans/schedule-preview", explicit).json()["runs"][0]["ms"] == exact


@pytest.mark.parametrize(
    "schedule",
    [
        {"kind": "cron", "expr": "0 0 30 2 *", "tz": "UTC"},  # never fires
        {"kind": "at", "at": "2026-01-01T00:00:00Z"},  # in the past
    ],
)
def test_a_schedule_without_a_future_run_answers_no_runs(planner, schedule):
    response = planner.post("/api/plans/schedule-preview", {"schedule": schedule, "afterMs": AFTER})
    assert response.status_code == 200 and response.json() == {"runs": []}


def test_a_future_at_runs_once(planner):
    response = planner.post(
        "/api/plans/schedule-preview",
        {"schedule": {"kind": "at", "at": "2026-03-08T09:00:00+08:00"}, "afterMs": AFTER},
    )
    assert response.json() == {"runs": [{"ms": 1772931600000, "iso": "2026-03-08T01:00:00.000Z"}]}


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ({"kind": "cron", "expr": "61 * * * *"}, "CronPattern: Invalid value for minute: 61"),
        ({"kind": "cron", "expr": "* * *"}, "CronPattern: invalid configuration format ('* * *'), exactly five, six, or seven space separated parts are required."),
        ({"kind": "cron", "expr": "0 9 * * *", "tz": "Mars/Base"}, "Invalid time zone specified: Mars/Base"),
        ({"kind": "every", "everyMs": 10}, "invalid schedule.everyMs: expected an integer >= 1000 (got 10)"),
        ({"kind": "at", "at": "2026-02-30T09:00:00Z"}, "Invalid schedule.at: expected ISO-8601 timestamp (got 2026-02-30T09:00:00Z)"),
        ({"kind": "weekly"}, "weekly"),
    ],
)
def test_it_refuses_a_bad_schedule_with_the_engine_message(planner, schedule, message):
    response = planner.post("/api/plans/schedule-preview", {"schedule": schedule, "afterMs": AFTER})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "INVALID_SCHEDULE"
    assert message in error["message"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "schedule: This field is required."),
        ({"schedule": "0 9 * * *"}, 'schedule: Expected a dictionary of items but got type "str".'),
        ({"schedule": {"kind": "cron", "expr": "0 9 * * *"}, "count": 51}, "count: Ensure this value is less than or equal to 50."),
        ({"schedule": {"kind": "cron", "expr": "0 9 * * *"}, "count": 0}, "count: Ensure this value is greater than or equal to 1."),
        ({"schedule": {"kind": "cron", "expr": "0 9 * * *"}, "afterMs": "soon"}, "afterMs: A valid integer is required."),
        # A zone or a job id is text: a number is refused, not turned into "0".
        ({"schedule": {"kind": "every", "everyMs": 3600000}, "hostTz": 0}, "hostTz: Not a valid string."),
        ({"schedule": {"kind": "cron", "expr": "0 9 * * *"}, "jobId": 42}, "jobId: Not a valid string."),
        ({"schedule": {"kind": "cron", "expr": "0 9 * * *"}, "jobId": " \x85"}, "jobId: This field may not be blank."),
    ],
)
def test_it_refuses_bad_params_naming_the_field(planner, body, message):
    response = planner.post("/api/plans/schedule-preview", body)
    assert response.status_code == 400
    assert response.json() == {"error": {"code": "INVALID_REQUEST", "message": message}}


def test_it_refuses_outsiders(anonymous, make_client):
    body = {"schedule": {"kind": "cron", "expr": "0 9 * * *"}}
    assert anonymous.post("/api/plans/schedule-preview", body).status_code == 401
    gateway_only = make_client("gateway:write", "longrun:write")
    response = gateway_only.post("/api/plans/schedule-preview", body)
    assert response.status_code == 403
    assert response.json()["error"]["message"] == "API key lacks scope plans:read"
    assert make_client("plans:write").post("/api/plans/schedule-preview", body).status_code == 200


def test_the_admin_page_describes_and_lists_runs_in_the_users_language(client, db):
    user = User.objects.create_superuser("pat", "", "pw-pat-12345")
    client.force_login(user)
    page = client.get("/admin/plans/schedule-preview/", {
        "kind": "cron", "expr": "30 2 * * *", "tz": "America/New_York", "count": "3",
    }).content.decode()
    assert "Every day at 02:30 (America/New_York)" in page
    assert page.count("<tr><td>") == 3
    client.post("/admin/language/", {"language": "zh-hans"})
    page = client.get("/admin/plans/schedule-preview/", {
        "kind": "cron", "expr": "30 2 * * *", "tz": "America/New_York", "count": "3",
    }).content.decode()
    assert "每天 02:30 (America/New_York)" in page
    bad = client.get("/admin/plans/schedule-preview/", {"kind": "cron", "expr": "61 * * * *",
                                                         "count": "3"}).content.decode()
    assert "CronPattern: Invalid value for minute: 61" in bad


@pytest.mark.parametrize(
    ("expr", "chinese"),
    [
        ("61 * * * *", "分钟字段的值无效：61"),
        ("* * *", "表达式无效（'* * *'）：需要用空格分隔的五、六或七个部分。"),
        ("5-2 * * * *", "范围的起点大于终点：'5-2'"),
        ("x * * * *", "表达式第 1 部分（x）含有不允许的字符。"),
    ],
)
def test_the_admin_page_shows_croners_errors_translated_with_the_original_beside(
    client, db, expr, chinese
):
    """Issue 22: a reader of the Chinese admin reads the refusal in Chinese, and still has
    croner's own words to search for; the English admin shows croner's words alone."""
    client.force_login(User.objects.create_superuser("pat", "", "pw-pat-12345"))
    query = {"kind": "cron", "expr": expr, "count": "3"}
    english = client.get("/admin/plans/schedule-preview/", query).content.decode()
    assert 'id="schedule-error-translated"' not in english
    original = re.search(r'<p class="errornote" id="schedule-error">(.*?)</p>', english).group(1)
    assert original.startswith("CronPattern: ")
    client.post("/admin/language/", {"language": "zh-hans"})
    page = html.unescape(client.get("/admin/plans/schedule-preview/", query).content.decode())
    assert f'<span id="schedule-error-translated">{chinese}</span>' in page
    assert f'<span id="schedule-error-original" lang="en">({html.unescape(original)})</span>' in page


def test_the_admin_page_needs_staff(client, db):
    response = client.get("/admin/plans/schedule-preview/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
