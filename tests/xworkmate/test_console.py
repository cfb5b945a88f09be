"""`xworkmate`, the installed command, and its production profile `serve` (issue 20, D-K29).

The refusals run the real command in a subprocess: each is one line naming what to
set, nothing is started and nothing is written (no database file, no lock, no state).
The processes `serve` starts are `xworkmate.supervisor.commands`'s, shared with `run`
and the deployment files; tests/integration runs them on PostgreSQL and Redis.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from xworkmate import __version__
from xworkmate.console import main
from xworkmate.policies import bind_problem, production_problem
from xworkmate.supervisor import commands, worker_names

XWORKMATE = str(Path(sys.executable).parent / "xworkmate")
TEST_CONFIG = str(ROOT / "tests" / "xworkmate.test.toml")


def _xworkmate(*args: str, home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items()
            if k not in ("DATABASE_URL", "CELERY_BROKER_URL") and not k.startswith("XWORKMATE_")}
    return subprocess.run(
        [XWORKMATE, *args], capture_output=True, text=True, timeout=120, check=False,
        cwd=home.parent, env=base | {"XWORKMATE_HOME": str(home), "XWORKMATE_CONFIG": TEST_CONFIG,
                                     "DJANGO_SETTINGS_MODULE": "xworkmate.settings"} | env,
    )


def _nothing_written(home: Path) -> None:
    left = {p.name for p in home.iterdir()} if home.exists() else set()
    # Loading the settings makes the data home's fixed folders, nothing else.
    assert left <= {"logs", "static", "secrets", "metrics", "broker"}, left


# --- the command itself -------------------------------------------------------------------


def test_version_and_usage(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"xworkmate {__version__}\n"
    assert main(["--help"]) == 0
    usage = capsys.readouterr().out
    for action in ("run", "serve", "manage"):
        assert f"\n  {action} " in usage
    assert main([]) == 2  # no command: the usage, and a failing exit code


def test_an_unknown_command_is_refused_in_one_line(capsys):
    assert main(["start"]) == 2
    assert capsys.readouterr().err == (
        "xworkmate: unknown command 'start'; expected run, serve or manage (`xworkmate --help`)\n"
    )


def test_the_installed_script_runs_manage_commands_and_reports_a_broken_config(tmp_path):
    home = tmp_path / "home"
    shown = _xworkmate("manage", "xworkmate", "config", home=home)
    assert shown.returncode == 0 and '"service"' in shown.stdout
    example = _xworkmate("manage", "xworkmate", "config", "--example", home=home)
    assert example.stdout == (ROOT / "xworkmate.example.toml").read_text(encoding="utf-8")
    bad = tmp_path / "bad.toml"
    bad.write_text("[service]\nweb_workers = -1\n", encoding="utf-8")
    broken = _xworkmate("serve", home=home, XWORKMATE_CONFIG=str(bad))
    assert broken.returncode == 2
    assert broken.stderr == (
        "xworkmate: configuration error, nothing was started:\n"
        f"  {bad}: service.web_workers: must be an integer >= 0 (got -1)\n"
    )
    # Its usage names the command a user types, not Django's runner.
    helped = _xworkmate("serve", "--help", home=home)
    assert helped.stdout.startswith("usage: xworkmate serve ")


# --- serve's refusals -----------------------------------------------------------------------


def test_serve_refuses_the_embedded_database_in_one_line(tmp_path):
    home = tmp_path / "home"
    result = _xworkmate("serve", home=home)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "CommandError: database: serve is the production profile and needs PostgreSQL "
        "(set DATABASE_URL or database.url); for the embedded SQLite default run `xworkmate run`"
    )
    assert not (home / "xworkmate.sqlite3").exists()
    _nothing_written(home)


def test_serve_refuses_the_file_broker_in_one_line(tmp_path):
    home = tmp_path / "home"
    result = _xworkmate("serve", "--only", "worker", home=home,
                        DATABASE_URL="postgresql://nobody@127.0.0.1:1/none")
    assert result.returncode == 1
    assert result.stderr.strip().startswith(
        "CommandError: broker: serve is the production profile and needs a broker server"
    )
    _nothing_written(home)


@pytest.mark.parametrize(("args", "message"), [
    (("--bind", "8000"), "--bind / XWORKMATE_BIND: must be HOST:PORT or unix:PATH (got '8000')"),
    (("--bind", "0.0.0.0:99999"),
     "--bind / XWORKMATE_BIND: the port must be a TCP port number 1-65535 (got '0.0.0.0:99999')"),
    (("--workers", "0"), "--workers: must be at least 1"),
    (("--web-workers", "0"), "--web-workers: must be at least 1"),
    (("--concurrency", "-2"), "--concurrency: must be at least 1"),
    # A files worker serves one host's workspace roots (D-K31): which one must be said.
    (("--only", "files"), "--only files: set XWORKMATE_HOST (workspace.this_host) to the host "
     "whose workspace roots this worker serves, as [workspace.hosts] names it"),
])
def test_serve_refuses_bad_options_naming_the_option(tmp_path, args, message):
    home = tmp_path / "home"
    result = _xworkmate("serve", *args, home=home)
    assert result.returncode == 1
    assert result.stderr.strip() == f"CommandError: {message}"
    _nothing_written(home)


def test_the_bind_rule():
    assert bind_problem("127.0.0.1:8000") is None
    assert bind_problem("[::1]:8000") is None
    assert bind_problem("unix:/run/xworkmate.sock") is None
    assert bind_problem("unix:") == "a unix: address needs a path"
    assert bind_problem(":8000") == "must be HOST:PORT or unix:PATH (got ':8000')"


def test_the_production_rule():
    assert production_problem("postgresql", "redis://r:6379/0") is None
    assert production_problem("sqlite", "redis://r:6379/0").startswith("database: ")
    assert production_problem("postgresql", "filesystem://").startswith("broker: ")


# --- the processes ---------------------------------------------------------------------------


def test_several_worker_processes_get_their_own_names_and_nodes(tmp_path):
    assert worker_names(1) == ["worker"]
    assert worker_names(3) == ["worker-1", "worker-2", "worker-3"]
    cmds = commands(bind="0.0.0.0:8000", embedded_broker=False, beat_schedule_file="b",
                    home=tmp_path, workers=9, worker_processes=2, concurrency=4)
    assert list(cmds) == ["web", "beat", "worker-1", "worker-2"]
    nodes = [cmd[cmd.index("--hostname") + 1] for name, cmd in cmds.items() if "worker" in name]
    assert nodes == ["xworkmate-1@%h", "xworkmate-2@%h"]
    assert all(cmds[n][cmds[n].index("--concurrency") + 1] == "4" for n in ("worker-1", "worker-2"))
    # A broker server has broadcast queues: the worker keeps mingle, gossip and heartbeats.
    assert "--without-gossip" not in cmds["worker-1"]
    web = cmds["web"]
    assert web[web.index("--bind") + 1] == "0.0.0.0:8000"
    assert web[web.index("--workers") + 1] == "9"


def test_a_busy_port_is_one_line_before_anything_starts(tmp_path):
    import socket

    home = tmp_path / "home"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = _xworkmate("run", "--port", str(port), home=home, DATABASE_URL="")
        assert result.returncode == 1
        assert result.stderr.strip() == (
            f"CommandError: web port (XWORKMATE_PORT or --port): 127.0.0.1:{port} is already "
            "in use (another service, or another run)"
        )
        assert "started" not in result.stdout
        # Nothing migrated, bootstrapped or started.
        assert not (home / "xworkmate.sqlite3").exists()
