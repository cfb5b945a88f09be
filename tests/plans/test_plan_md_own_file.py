"""PLAN.md is read only from a plain file of its own (D-C19).

An agent owns its workspace, so it can put in place of PLAN.md a hard link to
a file elsewhere on the same disk, a symlink, or a FIFO. Reading (the content
endpoint), revising, cancelling and reconciling must refuse each with the
JSON error shape, and nothing of the other file may be returned, recorded as a
revision or shown on the review page.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from plans.models import Entry, Revision
from plans.services import plans_reconcile
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db

SESSION = "agent:ops:user:u-1:direct:chat-1"
SECRET = "不该离开的另一份文件"


def _hard_link(plan_md: Path, outside: Path) -> None:
    os.link(outside, plan_md)


def _symlink(plan_md: Path, outside: Path) -> None:
    os.symlink(outside, plan_md)


def _fifo(plan_md: Path, outside: Path) -> None:
    os.mkfifo(plan_md)


REPLACEMENTS: dict[str, tuple[Callable[[Path, Path], None], str]] = {
    "hard link": (_hard_link, "is a hard link (2 names for one file)"),
    "symlink": (_symlink, "is a symlink"),
    "fifo": (_fifo, "is not a regular file"),
}


@pytest.fixture(params=sorted(REPLACEMENTS))
def replaced(request, owner, workspace, tmp_path) -> tuple[str, str]:
    """A proposed plan whose PLAN.md the agent then swapped for another file."""
    body = {
        "sessionKey": SESSION, "turnId": "run-1", "taskName": "日报", "persona": "助理",
        "objective": "每天发现库存异常", "result": "日报", "steps": ["每天生成日报"],
        "schedule": {"kind": "cron", "expr": "0 9 * * *"},
    }
    response = owner.post("/api/plans/propose", body)
    assert response.status_code == 201, response.content
    task = str(response.json()["plan"]["taskId"])
    plan_md = workspace / "archives" / "chat-1" / "PLAN.md"
    # The other file is a valid PLAN.md with other text: were it read, it would verify.
    outside = tmp_path / "elsewhere.md"
    outside.write_text(plan_md.read_text().replace("每天发现库存异常", SECRET), encoding="utf-8")
    plan_md.unlink()
    make, rule = REPLACEMENTS[request.param]
    make(plan_md, outside)
    return task, rule


def _json_error(response: Any, status: int, code: str, rule: str) -> None:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json"
    error = response.json()["error"]
    assert error["code"] == code and rule in error["message"], error
    assert "only a plain file of its own is read" in error["message"]
    assert SECRET not in response.content.decode()


def test_it_refuses_to_read_revise_or_cancel_a_plan_md_that_is_not_its_own_file(
    replaced, owner: ApiClient
):
    task, rule = replaced
    _json_error(owner.get(f"/api/plans/{task}/content"), 502, "BAD_GATEWAY", rule)
    revise = owner.post(f"/api/plans/{task}/revise", {"result": "周报", "turnId": "run-2"})
    _json_error(revise, 400, "INVALID_REQUEST", rule)
    _json_error(owner.post(f"/api/plans/{task}/cancel", {"turnId": "run-2"}), 400,
                "INVALID_REQUEST", rule)
    confirm = {"revision": 1, "message": "确认", "turnId": "run-2"}
    _json_error(owner.post(f"/api/plans/{task}/confirm", confirm), 400, "INVALID_REQUEST", rule)
    # Nothing of the other file was recorded; the entry is as it was.
    assert list(Revision.objects.values_list("number", flat=True)) == [1]
    assert not Revision.objects.filter(content__contains=SECRET).exists()
    entry = Entry.objects.get(task_id=task)
    assert entry.state == Entry.AWAITING and entry.confirmed_revision is None


def test_it_reports_such_a_plan_md_on_reconcile_and_the_review_page_shows_none_of_it(replaced):
    task, rule = replaced
    report = plans_reconcile(now=Revision.objects.get().written_at)
    assert rule in report.problems["chat-1"]
    assert not Revision.objects.filter(content__contains=SECRET).exists()
    browser = Client()
    browser.force_login(User.objects.create_superuser("reviewer", "r@example.com", "pw"))
    entry = Entry.objects.get(task_id=task)
    page = browser.get(reverse("admin:plans_entry_change", args=[entry.pk]))
    assert page.status_code == 200
    assert SECRET not in page.content.decode()
