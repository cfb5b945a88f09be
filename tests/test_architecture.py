"""The import rules (docs/decisions/kernel.md D-K1..D-K3) hold, and the checker catches breaks.

`lint-imports` runs in the test command; here it also runs on a copy of the
code with one deliberate violation per rule, to prove each contract can fail.
The pure packages are imported in a Python where Django, DRF and Celery
cannot be imported at all.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGES = ("xworkmate", "gateway", "artifacts", "plans", "longrun")
PURE = ("xworkmate.lib", "artifacts.engine", "plans.schedule", "plans.planfile", "longrun.policies")
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT), "--no-cache", "--config", str(root / "pyproject.toml")],
        capture_output=True, text=True, cwd=root, timeout=120, check=False,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
    )


def test_the_contracts_are_kept():
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("xworkmate/lib/durations.py", "import django", "D-K2 pure layer: no framework"),
        ("artifacts/engine/refs.py", "import celery", "D-K2 pure layer: no framework"),
        ("artifacts/engine/refs.py", "from xworkmate import config", "D-K2 pure layer: only itself"),
        ("plans/schedule/engine.py", "import artifacts.engine", "D-K2 pure layer: only itself"),
        ("plans/planfile/entry.py", "import django", "D-K2 pure layer: no framework"),
        ("longrun/policies/timing.py", "import django", "D-K2 pure layer: no framework"),
        ("xworkmate/health.py", "import plans.selectors", "D-K1 kernel: imports no app"),
        ("xworkmate/admin.py", "from gateway import models", "D-K1 kernel: imports no app"),
        ("plans/selectors.py", "from gateway.models import TaskRun", "D-K3 apps: only engines"),
        ("gateway/hooks.py", "import artifacts.api", "D-K3 apps: only engines"),
        ("longrun/apps.py", "import plans.selectors", "D-K3 plans and longrun: independent"),
    ],
)
def test_a_deliberate_violation_breaks_its_contract(tmp_path, module, line, contract):
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{line}  # noqa\n", encoding="utf-8")
    result = _lint(tmp_path)
    assert result.returncode == 1, result.stdout
    broken = [row for row in result.stdout.splitlines() if " BROKEN" in row]
    assert len(broken) >= 1 and any(row.startswith(contract) for row in broken), result.stdout


def test_every_app_module_others_may_not_use_is_in_the_app_contract():
    """New models / api / views / admin / tasks modules must join the D-K3 contract."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contract = next(
        c for c in config["tool"]["importlinter"]["contracts"]
        if c["id"] == "apps-use-services-and-selectors"
    )
    apps = {name: ROOT / name for name in ("gateway", "artifacts", "plans", "longrun")}
    private = ("models", "api", "views", "admin", "tasks", "methods", "hooks")
    present = {
        f"{app}.{name}"
        for app, folder in apps.items()
        for name in private
        if (folder / f"{name}.py").exists() or (folder / name / "__init__.py").exists()
    }
    assert present <= set(contract["forbidden_modules"])


_BLOCK_FRAMEWORKS = """
import sys
class _Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"django", "rest_framework", "celery", "kombu", "drf_spectacular"}:
            raise ImportError(f"{name} is blocked for this test")
        return None
sys.meta_path.insert(0, _Blocked())
import importlib
for name in sys.argv[1:]:
    importlib.import_module(name)
loaded = sorted({m.split(".")[0] for m in sys.modules} & {"django", "rest_framework", "celery", "kombu"})
print("loaded frameworks:", loaded)
"""


@pytest.mark.parametrize("package", PURE)
def test_a_pure_package_imports_without_any_framework(package):
    result = subprocess.run(
        [sys.executable, "-c", _BLOCK_FRAMEWORKS, package],
        capture_output=True, text=True, cwd=ROOT, timeout=60, check=False,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "loaded frameworks: []"


def test_the_blocker_itself_refuses_a_framework():
    result = subprocess.run(
        [sys.executable, "-c", _BLOCK_FRAMEWORKS, "xworkmate.periodic"],
        capture_output=True, text=True, cwd=ROOT, timeout=60, check=False,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode != 0 and "is blocked for this test" in result.stderr
