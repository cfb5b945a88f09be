"""The admin's side of D-C26: its pause and resume actions, and the timeline page of a pause."""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

import pytest
import time_machine
from django.test import Client

from plans.models import Entry
from plans.timeline import PAUSED_NOW
from tests.conftest import csrf_token
from tests.plans.test_missed_and_overlap_policies import _tick
from tests.plans.test_paused_fire_times import PAUSED, _at, _ran_step_0, _timeline

pytestmark = pytest.mark.django_db


@pytest.fixture
def allowed(settings: Any) -> None:
    settings.PLANS_TIME_CONTROL = True


def _admin_act(browser: Client, entry: Entry, action: str, at: datetime) -> None:
    with time_machine.travel(at, tick=False):
        token = csrf_token(browser, f"/admin/plans/entry/{entry.pk}/change/")
        answer = browser.post(f"/admin/plans/entry/{entry.pk}/{action}/",
                              {"csrfmiddlewaretoken": token})
    assert answer.status_code == 302, answer.content


def _page(browser: Client, entry: Entry, at: datetime, language: str = "en") -> str:
    with time_machine.travel(at, tick=False):
        answer = browser.get(f"/admin/plans/entry/{entry.pk}/timeline/",
                             HTTP_ACCEPT_LANGUAGE=language)
    assert answer.status_code == 200
    return str(answer.content.decode())


def test_the_timeline_page_shows_the_pause_going_on_and_then_its_rows(
    owner, browser, workspace, allowed
):
    task = _ran_step_0(owner)
    entry = Entry.objects.get(task_id=task)
    _admin_act(browser, entry, "pause", _at(0, 30))
    _tick(_at(1, 5))
    page = _page(browser, entry, _at(2, 10))
    # The plan's zone: the host's (an every has none of its own), Shanghai in the tests.
    assert ('id="timeline-paused">The job is paused since 2026-03-10 09:00:30 CST: its fire '
            "times since then are listed as paused") in page
    outcomes = re.findall(r'data-kind="fire" data-outcome="([a-z]+)"', page)
    assert outcomes == ["ran", "paused", "paused"]
    assert page.count(PAUSED_NOW) == 2 and "Fire time: paused" in page
    zh = _page(browser, entry, _at(2, 10), "zh-hans")
    assert "任务自 2026-03-10 09:00:30 CST 起已暂停" in zh and zh.count("触发时间：暂停中") == 2
    assert "The job is paused since" not in zh

    _admin_act(browser, entry, "resume", _at(2, 30))
    page = _page(browser, entry, _at(2, 40))
    assert 'id="timeline-paused"' not in page
    assert re.findall(r'data-kind="fire" data-outcome="([a-z]+)"', page) == [
        "ran", "skipped", "skipped"]
    assert page.count(PAUSED) == 2
    with time_machine.travel(_at(2, 40), tick=False):
        download = json.loads(browser.get(f"/admin/plans/entry/{entry.pk}/timeline.json").content)
    assert download == _timeline(owner, task, _at(2, 40), "?limit=1000")
