"""The fault suite: real processes on a PostgreSQL cluster and a Redis of the suite's own.

Run by `scripts/faults`, which starts both on free ports and points DATABASE_URL and
CELERY_BROKER_URL at them; a test here refuses to run otherwise, since it kills,
stops or freezes what it runs on and the machine's shared servers must never be.
Each test prints its figures (lost, doubled, recovery seconds).
"""

from __future__ import annotations

import os

import pytest
from django.conf import settings
from django.db import connection

# The integration run's helpers and fixtures, for these processes.
from tests.integration.conftest import CeleryProcesses, clear_broker  # noqa: F401

# The plans' workspace (a PLAN.md per plan), for the tests that run confirmed plans.
from tests.integration.test_plans_real import workspace  # noqa: F401

SUITE_ENV = "XWORKMATE_FAULT_SUITE"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/faults/" in str(item.fspath):
            item.add_marker(pytest.mark.faults)


@pytest.fixture
def own_services(transactional_db: None) -> str:
    """The suite's own servers, checked: PostgreSQL and Redis, neither the shared one."""
    marker = os.environ.get(SUITE_ENV)
    if not marker:
        pytest.fail("the fault suite runs through scripts/faults (its own PostgreSQL and Redis)")
    db = connection.settings_dict
    if connection.vendor != "postgresql" or str(db["PORT"]) in ("", "5432"):
        pytest.fail("the fault suite must not run on the machine's shared PostgreSQL")
    if not settings.CELERY_BROKER_URL.startswith("redis://") or ":6379/" in settings.CELERY_BROKER_URL:
        pytest.fail("the fault suite must not run on the machine's shared Redis")
    return marker


@pytest.fixture
def real_services(own_services: str) -> None:
    """What the integration tests ask for, here: the suite's own servers."""
