"""The fault suite: real processes on a PostgreSQL cluster and a Redis of the suite's own.

Run by `scripts/faults`, which starts both on free ports and points DATABASE_URL and
CELERY_BROKER_URL at them; a test here refuses to run otherwise, since it kills,
stops or freezes what it runs on and the machine's shared servers must never be.
Each test prints its figures (lost, doubled, recovery seconds).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from tests.conftest import ROOT

# The integration run's helpers and fixtures, for these processes.
from tests.integration.conftest import CeleryProcesses, clear_broker  # noqa: F401

# The plans' workspace (a PLAN.md per plan), for the tests that run confirmed plans.
from tests.integration.test_plans_real import workspace  # noqa: F401
from tests.support.own_postgres import OwnPostgres, own_postgres

SUITE_ENV = "XWORKMATE_FAULT_SUITE"
OWN_DATABASE = "xworkmate_own"


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


@pytest.fixture
def own_cluster(real_services: None) -> Iterator[OwnPostgres]:
    """A PostgreSQL cluster of the test's own with an empty OWN_DATABASE, for gunicorn.

    Not the suite's: a test stops or restarts it, which must not break this
    process's own connection to the test database.
    """
    with own_postgres() as running:
        running.createdb(OWN_DATABASE)
        yield running


def manage_on(tmp_path: Path, db_url: str, *args: str) -> str:
    """`manage.py ARGS` on `db_url` with tmp_path's config and home; its stdout."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "xworkmate.settings",
           "XWORKMATE_CONFIG": str(tmp_path / "xworkmate.toml"),
           "XWORKMATE_HOME": str(tmp_path / "home"), "DATABASE_URL": db_url}
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=True)
    return done.stdout


@dataclass(frozen=True)
class Served:
    """What a gunicorn of a fault test runs on: see served_workspace."""

    workspace: Path
    config: str
    db_url: str
    token: str


def served_workspace(tmp_path: Path, cluster: OwnPostgres, key: str, *scopes: str) -> Served:
    """A workspace and config in tmp_path, OWN_DATABASE migrated on `cluster` and an API
    key `key` with `scopes`: what a gunicorn of the test needs."""
    root = tmp_path / "ws"
    root.mkdir()
    config = f'[workspace]\nroots = ["{root}"]\n'
    (tmp_path / "xworkmate.toml").write_text(config, encoding="utf-8")
    db_url = cluster.url(OWN_DATABASE)
    manage_on(tmp_path, db_url, "migrate", "--no-input")
    scope_args = [arg for scope in scopes for arg in ("--scope", scope)]
    token = manage_on(tmp_path, db_url, "xworkmate", "apikey", "create", "--name", key,
                      *scope_args).strip().splitlines()[-1]
    return Served(root, config, db_url, token)
