"""`manage.py xworkmate ...` as an operator runs it: config, check, refusal to start."""

from __future__ import annotations

import json

from tests.conftest import manage


def test_it_prints_the_effective_config_with_secrets_masked(transactional_db):
    result = manage(
        "xworkmate", "config",
        env={"XWORKMATE_ARTIFACT_REF_SIGNING_SECRET": "hunter2", "SECRET_KEY": "k" * 40},
    )
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    assert shown["artifacts"]["ref_signing_secret"] == "********"
    assert "hunter2" not in result.stdout and "k" * 40 not in result.stdout
    assert shown["service"]["language_code"] == "en"  # from tests/xworkmate.test.toml
    assert shown["periodic_jobs"][0]["name"] == "liveness"


def test_it_checks_a_file_and_exits_non_zero_on_errors(transactional_db, tmp_path):
    good = tmp_path / "good.toml"
    good.write_text('[longrun]\nstale = "15m"\n', encoding="utf-8")
    ok = manage("xworkmate", "config", "--check", str(good))
    assert ok.returncode == 0 and ok.stdout.strip() == f"{good}: OK"
    bad = tmp_path / "bad.toml"
    bad.write_text('[longrun]\nstale = "15 minutes"\n[service]\nwho = 1\n', encoding="utf-8")
    result = manage("xworkmate", "config", "--check", str(bad))
    assert result.returncode == 1
    assert f"{bad}: service.who: unknown key" in result.stderr
    assert f"{bad}: longrun.stale: '15 minutes' is not a duration" in result.stderr


def test_it_refuses_to_start_with_a_broken_config(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[service]\ntime_zone = "Moon/Base"\n', encoding="utf-8")
    home = tmp_path / "home"
    result = manage(
        "xworkmate", "run",
        env={"XWORKMATE_CONFIG": str(bad), "XWORKMATE_HOME": str(home),
             "DJANGO_SETTINGS_MODULE": "xworkmate.settings"},
    )
    assert result.returncode == 2
    assert "configuration error, nothing was started" in result.stderr
    assert "service.time_zone: 'Moon/Base' is not an IANA time zone" in result.stderr
    assert not home.exists()  # not even the data home was created


def test_it_refuses_to_start_without_its_database(tmp_path):
    result = manage(
        "xworkmate", "run",
        env={"DATABASE_URL": "postgresql://nobody@127.0.0.1:1/xworkmate",
             "XWORKMATE_HOME": str(tmp_path), "DJANGO_SETTINGS_MODULE": "xworkmate.settings",
             "XWORKMATE_CONFIG": str(tmp_path / "none.toml")},
    )
    # XWORKMATE_CONFIG names a missing file: that alone must stop it.
    assert result.returncode == 2 and "XWORKMATE_CONFIG: config file not found" in result.stderr
    (tmp_path / "none.toml").write_text("", encoding="utf-8")
    result = manage(
        "xworkmate", "run",
        env={"DATABASE_URL": "postgresql://nobody@127.0.0.1:1/xworkmate",
             "XWORKMATE_HOME": str(tmp_path), "DJANGO_SETTINGS_MODULE": "xworkmate.settings",
             "XWORKMATE_CONFIG": str(tmp_path / "none.toml")},
    )
    assert result.returncode == 1
    assert "database: cannot connect to postgresql at 127.0.0.1 (database.url / DATABASE_URL)" in result.stderr
    assert "started web" not in result.stdout


def test_it_refuses_to_start_without_its_broker(transactional_db, tmp_path):
    result = manage(
        "xworkmate", "run",
        env={"CELERY_BROKER_URL": "redis://127.0.0.1:1/0", "XWORKMATE_PORT": "8999"},
    )
    assert result.returncode == 1
    assert "broker: cannot connect to redis (broker.url / CELERY_BROKER_URL)" in result.stderr
    assert "started web" not in result.stdout


def test_it_refuses_a_periodic_job_whose_task_does_not_exist(transactional_db, tmp_path):
    config = tmp_path / "jobs.toml"
    config.write_text(
        '[[periodic_jobs]]\nname = "ghost"\ntask = "xworkmate.no_such_task"\nevery = "1m"\n',
        encoding="utf-8",
    )
    result = manage("xworkmate", "run", env={"XWORKMATE_CONFIG": str(config)})
    assert result.returncode != 0
    assert "periodic_jobs[ghost].task: no Celery task named 'xworkmate.no_such_task'" in result.stderr


def test_it_refuses_a_bad_port(transactional_db):
    result = manage("xworkmate", "run", env={"XWORKMATE_PORT": "http"})
    assert result.returncode == 1
    assert "XWORKMATE_PORT: must be a TCP port number 1-65535 (got 'http')" in result.stderr


def test_checking_a_missing_file_names_that_file(transactional_db, tmp_path):
    missing = tmp_path / "missing.toml"
    result = manage("xworkmate", "config", "--check", str(missing))
    assert result.returncode == 1
    assert result.stderr.splitlines()[0] == f"{missing}: config file not found"
    assert "XWORKMATE_CONFIG" not in result.stderr
