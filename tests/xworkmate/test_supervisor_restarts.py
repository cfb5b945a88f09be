"""D-K24: `xworkmate run` starts a dead worker or beat again, with a pause that doubles;
a dead web server stops the service. Real child processes, a real supervisor process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from tests.conftest import ROOT
from xworkmate.supervisor import MAX_RESTART_DELAY, STATE_FILE, restart_delay, run_lock

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]


def _dies_first_time(marker: Path) -> list[str]:
    """A child that exits 3 the first time it runs and then keeps running."""
    code = (
        "import pathlib, sys, time\n"
        f"m = pathlib.Path({str(marker)!r})\n"
        "if not m.exists():\n"
        "    m.write_text('died')\n"
        "    sys.exit(3)\n"
        "time.sleep(120)\n"
    )
    return [sys.executable, "-c", code]


def _supervise(tmp_path: Path, cmds: dict[str, list[str]]) -> subprocess.Popen[str]:
    script = (
        "import json, os, sys\n"
        "from pathlib import Path\n"
        "from xworkmate.supervisor import Supervisor\n"
        f"cmds = json.loads({json.dumps(json.dumps(cmds))})\n"
        f"sys.exit(Supervisor(cmds, os.environ, home=Path({str(tmp_path)!r})).run())\n"
    )
    return subprocess.Popen(
        [sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )


def _wait_for(predicate, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.1)


def test_the_pause_doubles_up_to_a_minute():
    assert [restart_delay(n) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 8.0]
    assert restart_delay(30) == MAX_RESTART_DELAY == 60.0


def test_a_dead_worker_is_started_again_and_counted(tmp_path: Path):
    state = tmp_path / STATE_FILE
    supervisor = _supervise(
        tmp_path, {"web": SLEEPER, "beat": SLEEPER, "worker": _dies_first_time(tmp_path / "m")}
    )
    try:
        _wait_for(
            lambda: state.exists()
            and json.loads(state.read_text())["children"]["worker"]["restarts"] == 1,
            "the worker's restart",
        )
        children = json.loads(state.read_text())["children"]
        assert children["worker"]["running"] is True
        assert children["worker"]["last_exit_code"] == 3
        assert children["beat"]["restarts"] == 0 and children["web"]["running"] is True
        assert supervisor.poll() is None  # the service kept running
    finally:
        supervisor.send_signal(signal.SIGTERM)
        out, _ = supervisor.communicate(timeout=60)
    assert supervisor.returncode == 0
    assert "xworkmate: worker exited with code 3 after 0s; restarting it in 1s" in out
    assert out.count("xworkmate: started worker") == 2
    assert not state.exists()  # a stopped service reports no children


def test_a_dead_web_server_stops_the_service(tmp_path: Path):
    dies = [sys.executable, "-c", "import sys; sys.exit(4)"]
    supervisor = _supervise(tmp_path, {"web": dies, "beat": SLEEPER, "worker": SLEEPER})
    out, _ = supervisor.communicate(timeout=60)
    assert supervisor.returncode == 1
    assert "xworkmate: web exited with code 4; stopping the rest" in out
    assert "xworkmate: stopped worker" in out


@pytest.mark.django_db
def test_healthz_shows_the_supervised_processes(client, settings):
    state = Path(settings.HOME) / STATE_FILE
    children = {"worker": {"pid": 7, "running": False, "restarts": 2, "last_exit_code": 1}}
    state.write_text(json.dumps({"pid": 1, "children": children}), encoding="utf-8")
    try:
        assert client.get("/healthz").json()["processes"] == children
    finally:
        state.unlink()
    assert "processes" not in client.get("/healthz").json()


def _hold_the_data_home(home: Path) -> subprocess.Popen[str]:
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from xworkmate.supervisor import run_lock\n"
        f"with run_lock(Path({str(home)!r})):\n"
        "    print('held', flush=True)\n"
        "    time.sleep(120)\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def test_a_second_run_on_the_same_data_home_is_refused_in_one_line(settings, tmp_path):
    settings.HOME = tmp_path
    holder = _hold_the_data_home(tmp_path)
    try:
        with pytest.raises(CommandError) as refused:
            call_command("xworkmate", "run", "--port", "8123")
        assert str(refused.value) == (
            f"another xworkmate run (pid {holder.pid}) is using the data home {tmp_path}"
        )
    finally:
        holder.kill()  # as kill -9: the kernel drops the lock with the process
        holder.wait()
    with run_lock(tmp_path):
        assert (tmp_path / "run.lock").read_text() == str(os.getpid())
