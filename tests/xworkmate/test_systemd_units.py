"""deploy/systemd: the production units verify, and systemd restarts what dies (D-K24)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

UNITS = ROOT / "deploy" / "systemd"
SERVICES = ("xworkmate-web.service", "xworkmate-worker.service", "xworkmate-beat.service")
INSTALLED_BIN = "/opt/xworkmate/.venv/bin"


def _settings(text: str) -> dict[str, list[str]]:
    values: dict[str, list[str]] = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            values.setdefault(key, []).append(value)
    return values


@pytest.mark.parametrize("name", SERVICES)
def test_each_service_restarts_on_failure_with_a_bounded_retry(name):
    unit = _settings((UNITS / name).read_text(encoding="utf-8"))
    assert unit["Restart"] == ["on-failure"]
    assert unit["RestartSec"] == ["5"]
    # At most 5 starts in 300 s: a process that cannot start leaves the unit failed.
    assert unit["StartLimitIntervalSec"] == ["300"] and unit["StartLimitBurst"] == ["5"]
    assert unit["User"] == ["xworkmate"]
    assert unit["WorkingDirectory"] == ["/var/lib/xworkmate"]
    assert unit["EnvironmentFile"] == ["/etc/xworkmate/xworkmate.env"]
    assert unit["PartOf"] == ["xworkmate.target"]
    assert unit["ExecStart"][0].startswith(INSTALLED_BIN + "/")


def test_the_units_run_the_commands_of_the_production_section():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    # Each unit runs the installed command's one process (issue 20), as the README says.
    for role in ("web", "worker", "beat"):
        unit = (UNITS / f"xworkmate-{role}.service").read_text(encoding="utf-8")
        command = _settings(unit)["ExecStart"][0]
        assert command.startswith(f"{INSTALLED_BIN}/xworkmate serve --only {role}")
        assert f"xworkmate-{role}.service" in readme
    assert "xworkmate serve --only" in readme
    env = _settings((UNITS / "xworkmate.env.example").read_text(encoding="utf-8"))
    for key in ("DATABASE_URL", "CELERY_BROKER_URL", "SECRET_KEY",
                "XWORKMATE_ARTIFACT_REF_SIGNING_SECRET", "XWORKMATE_HOME", "XWORKMATE_CONFIG"):
        assert key in env


def test_systemd_analyze_verifies_the_units(tmp_path: Path):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    # verify needs each ExecStart binary to exist: the units are checked with the
    # installed venv's path replaced by this venv's, which holds the same commands.
    here = str(Path(sys.executable).parent)
    for unit in (*SERVICES, "xworkmate.target"):
        text = (UNITS / unit).read_text(encoding="utf-8").replace(INSTALLED_BIN, here)
        (tmp_path / unit).write_text(text, encoding="utf-8")
    result = subprocess.run(
        [analyze, "verify", "--man=no", *(str(tmp_path / u) for u in (*SERVICES, "xworkmate.target"))],
        capture_output=True, text=True, check=False, timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # A setting systemd cannot parse is only a warning ("…, ignoring"): none may be printed.
    complaints = [line for line in (result.stdout + result.stderr).splitlines()
                  if "xworkmate" in line]
    assert complaints == []
