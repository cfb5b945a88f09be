"""The README's first command, exactly: `make run` on a free port, then /healthz says 200."""

from __future__ import annotations

import os
import re
import signal
import subprocess

import pytest

from tests.conftest import ROOT, free_port, http_status
from tests.integration.conftest import pid_alive, wait_for


def test_make_run_serves_health_and_admin_and_stops_on_sigterm(tmp_path):
    port = free_port()
    # The embedded default, as on a fresh machine: no config file, no URLs.
    env = {k: v for k, v in os.environ.items()
           if k not in ("XWORKMATE_CONFIG", "DATABASE_URL", "CELERY_BROKER_URL",
                        "DJANGO_SETTINGS_MODULE")}
    # A home of its own: the run creates the default workspace root under ~.
    (tmp_path / "user").mkdir()
    env |= {"XWORKMATE_PORT": str(port), "XWORKMATE_HOME": str(tmp_path / "home"),
            "XWORKMATE_ADMIN_PASSWORD": "smoke-test-pw", "HOME": str(tmp_path / "user")}
    log_path = tmp_path / "run.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(["make", "run"], cwd=ROOT, env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for(lambda: http_status(f"http://127.0.0.1:{port}/healthz") == 200 or proc.poll() is not None,
                 timeout=180, what="/healthz to answer 200")
        output = log_path.read_text(errors="replace")
        assert proc.poll() is None, output
        assert http_status(f"http://127.0.0.1:{port}/admin/login/") == 200
        assert (tmp_path / "home" / "xworkmate.sqlite3").exists()
        assert "smoke-test-pw" not in output  # a supplied password is never echoed
    finally:
        # What Ctrl-C does: signal the whole foreground process group.
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail("make run did not stop within 60s of SIGTERM")
    output = log_path.read_text(errors="replace")
    pids = [int(p) for p in re.findall(r"started \w+ \(pid (\d+)\)", output)]
    assert len(pids) == 3, output
    wait_for(lambda: not any(pid_alive(p) for p in pids), timeout=30, what="web, worker, beat to exit")
    for name in ("web", "beat", "worker"):
        assert f"stopped {name}" in output, output
