"""The one-command run's processes and commands on a fresh data home (issue 9 §7, §8, §9).

- web workers sized from the CPU count (`service.web_workers`);
- gunicorn's control socket in the data home, not in $HOME/.gunicorn;
- a command against a never-migrated data home says so in one line, without a
  traceback and without leaving a SQLite file behind;
- the run creates the configured workspace roots, saying so once.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from tests.conftest import ROOT, configure, manage
from tests.xworkmate.test_config import parse, problems
from xworkmate.management.commands import xworkmate as command
from xworkmate.supervisor import commands, control_socket_args, web_workers

TEST_CONFIG = str(ROOT / "tests" / "xworkmate.test.toml")


# --- web workers (issue 9 §7) ----------------------------------------------------------------


def test_it_sizes_the_web_workers_from_the_cpu_count():
    assert [web_workers(0, cpus) for cpus in (1, 2, 4, 5, 64)] == [3, 5, 9, 11, 12]
    assert web_workers(0, None) == 3  # os.cpu_count() may not know
    assert web_workers(7, 64) == 7 and web_workers(40, 1) == 40  # a configured count wins


def test_it_reads_the_web_workers_key():
    assert parse("").value("service", "web_workers") == 0
    assert parse("[service]\nweb_workers = 6\n").value("service", "web_workers") == 6
    assert problems("[service]\nweb_workers = -1\n") == [
        "service.web_workers: must be an integer >= 0 (got -1)"
    ]


def test_the_web_command_uses_the_worker_count_and_the_data_home_socket(tmp_path):
    cmds = commands(
        bind="127.0.0.1:8123", embedded_broker=True, beat_schedule_file=str(tmp_path / "beat"),
        home=tmp_path, workers=9,
    )
    web = cmds["web"]
    assert web[web.index("--workers") + 1] == "9"
    assert web[web.index("--control-socket") + 1] == str(tmp_path / "gunicorn.ctl")


def test_a_data_home_too_deep_for_a_unix_socket_runs_without_one(tmp_path):
    deep = tmp_path / ("d" * 120)
    assert control_socket_args(deep) == ["--no-control-socket"]
    assert control_socket_args(Path("/var/lib/xworkmate")) == [
        "--control-socket", "/var/lib/xworkmate/gunicorn.ctl"
    ]


def test_it_runs_with_the_configured_workers_and_creates_the_workspace_roots(
    db, settings, tmp_path, monkeypatch, capsys
):
    roots = [tmp_path / "ws-a", tmp_path / "ws-b"]
    (tmp_path / "ws-b").mkdir()
    configure(settings, "service", web_workers=4)
    configure(settings, "workspace", roots=tuple(str(r) for r in roots))
    started: list[dict[str, list[str]]] = []

    class FakeSupervisor:
        def __init__(self, cmds: dict[str, list[str]], env: Any, **_: Any) -> None:
            started.append(cmds)

        def run(self) -> int:
            return 0

    monkeypatch.setattr(command, "Supervisor", FakeSupervisor)
    with pytest.raises(SystemExit) as exited:
        call_command("xworkmate", "run", "--port", "8123")
    assert exited.value.code == 0
    web = started[0]["web"]
    assert web[web.index("--workers") + 1] == "4"
    assert web[web.index("--control-socket") + 1] == str(settings.HOME / "gunicorn.ctl")
    out = capsys.readouterr().out
    assert f"created workspace root {roots[0]}" in out
    assert f"created workspace root {roots[1]}" not in out  # it existed
    assert "; 4 web workers" in out
    assert roots[0].is_dir()
    # Once: a second start finds the root and says nothing about it.
    with pytest.raises(SystemExit):
        call_command("xworkmate", "run", "--port", "8123")
    assert "created workspace root" not in capsys.readouterr().out


def _wait_for(path: Path, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            return True
        time.sleep(0.1)
    return False


def test_gunicorns_control_socket_lives_in_the_data_home(tmp_path):
    home = tmp_path / "data"
    user_home = tmp_path / "user"
    user_home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_RUNTIME_DIR", "DATABASE_URL")}
    env |= {"HOME": str(user_home), "XWORKMATE_HOME": str(home), "XWORKMATE_CONFIG": TEST_CONFIG,
            "DJANGO_SETTINGS_MODULE": "xworkmate.settings"}
    web = commands(bind="127.0.0.1:0", embedded_broker=True, beat_schedule_file=str(home / "beat"),
                   home=home, workers=1)["web"]
    web[web.index("--bind") + 1] = "127.0.0.1:0"
    proc = subprocess.Popen(web, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        assert _wait_for(home / "gunicorn.ctl"), "no control socket in the data home"
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert not (user_home / ".gunicorn").exists(), err.decode(errors="replace")


# --- a data home that was never migrated (issue 9 §8) ------------------------------------------


def _fresh_env(home: Path | None) -> dict[str, str]:
    env = {"DATABASE_URL": "", "XWORKMATE_CONFIG": TEST_CONFIG,
           "DJANGO_SETTINGS_MODULE": "xworkmate.settings"}
    if home is not None:
        env["XWORKMATE_HOME"] = str(home)
    return env


@pytest.mark.parametrize("args", [("apikey", "list"), ("apikey", "revoke", "x"), ("bootstrap",)])
def test_a_command_on_a_fresh_data_home_says_it_was_never_migrated(tmp_path, args):
    home = tmp_path / "home"
    result = manage("xworkmate", *args, env=_fresh_env(home))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line == (
        f"CommandError: database: {home / 'xworkmate.sqlite3'} does not exist (never migrated); "
        "run `.venv/bin/python manage.py migrate` (or `make run`) first"
    )
    assert not (home / "xworkmate.sqlite3").exists()


def test_a_command_run_from_another_directory_leaves_no_database_behind(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "XWORKMATE_HOME"} | _fresh_env(None)
    result = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "xworkmate", "apikey", "list"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert "Traceback" not in result.stderr
    # Nothing in the directory it ran from: the data home is the checkout's (issue 22),
    # which this machine may or may not have migrated.
    assert list(tmp_path.iterdir()) == []
    assert result.returncode == 0 or (
        result.returncode == 1
        and f"{ROOT / 'var' / 'xworkmate.sqlite3'} does not exist (never migrated)" in result.stderr
    ), result.stderr


def test_an_empty_or_outdated_database_is_reported_in_one_line(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    sqlite3.connect(home / "xworkmate.sqlite3").close()  # an empty file, as a crash leaves it
    result = manage("xworkmate", "apikey", "list", env=_fresh_env(home))
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"CommandError: database: {home / 'xworkmate.sqlite3'} was never migrated; "
        "run `.venv/bin/python manage.py migrate` (or `make run`) first"
    )
    migrated = manage("migrate", "xworkmate", "0001", env=_fresh_env(home))
    assert migrated.returncode == 0, migrated.stderr
    result = manage("xworkmate", "apikey", "list", env=_fresh_env(home))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "lacks" in result.stderr and "migration(s) of this version" in result.stderr
    migrated = manage("migrate", env=_fresh_env(home))
    assert migrated.returncode == 0, migrated.stderr
    listed = manage("xworkmate", "apikey", "list", env=_fresh_env(home))
    assert listed.returncode == 0 and listed.stderr == ""


@pytest.mark.parametrize("args", [("plans", "reconcile"), ("plans", "tick"),
                                  ("longrun", "task_state", "list")])
def test_the_apps_commands_on_a_fresh_data_home_say_it_was_never_migrated(tmp_path, args):
    """Issue 22: the same one line as `apikey`, and no database file left behind."""
    home = tmp_path / "home"
    result = manage(*args, env=_fresh_env(home))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        f"CommandError: database: {home / 'xworkmate.sqlite3'} does not exist (never migrated); "
        "run `.venv/bin/python manage.py migrate` (or `make run`) first"
    ]
    assert not (home / "xworkmate.sqlite3").exists()


def test_xworkmate_longrun_on_a_fresh_data_home_says_so_in_one_line(tmp_path):
    home = tmp_path / "home"
    script = Path(sys.executable).parent / "xworkmate-longrun"
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"} | _fresh_env(home)
    result = subprocess.run([str(script), "task_state", "list"], env=env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"xworkmate-longrun: database: {home / 'xworkmate.sqlite3'} does not exist (never "
        "migrated); run `.venv/bin/python manage.py migrate` (or `make run`) first"
    ]
    assert not (home / "xworkmate.sqlite3").exists()
    # Its help needs no database.
    helped = subprocess.run([str(script), "--help"], env=env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=120, check=False)
    assert helped.returncode == 0 and "task_state" in helped.stdout
