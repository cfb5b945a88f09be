"""The import rules (docs/decisions/kernel.md D-K1..D-K3, D-K19) hold, and the checker catches breaks.

`lint-imports` runs in the test command; here it also runs on a copy of the
code with one deliberate violation at a time, at least one per contract of
pyproject.toml, to prove each contract can fail; a contract without such a
case fails the suite. The pure packages are imported in a Python where Django,
DRF and Celery cannot be imported at all.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGES = ("xworkmate", "gateway", "artifacts", "plans", "longrun")
PURE = ("xworkmate.lib", "artifacts.engine", "plans.schedule", "plans.planfile", "longrun.policies")
LINT = Path(sys.executable).with_name("lint-imports")
CONTRACTS: dict[str, str] = {
    contract["id"]: contract["name"]
    for contract in tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "importlinter"
    ]["contracts"]
}


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


@dataclass(frozen=True)
class Violation:
    """`line` added to `module` breaks the contract `proves` (and exactly the ones in `also`).

    `module` is a dotted name, so a case holds whether it is a module or a package
    (its `__init__.py`); `new` makes it a module of its own that did not exist.
    """

    module: str
    line: str
    proves: str
    also: frozenset[str] = frozenset()
    new: bool = False


VIOLATIONS = (
    Violation("xworkmate.lib.durations", "import django", "pure-no-framework"),
    Violation("artifacts.engine.refs", "import celery", "pure-no-framework"),
    Violation("plans.planfile.entry", "import django", "pure-no-framework"),
    Violation("longrun.policies.timing", "import django", "pure-no-framework"),
    Violation("plans.policies", "from django.db import models", "pure-no-framework"),
    # The kernel's config imports Django, so the pure layer now reaches a framework too.
    Violation(
        "artifacts.engine.refs", "from xworkmate import config", "pure-only-itself-and-lib",
        also=frozenset({"pure-no-framework"}),
    ),
    Violation("plans.schedule.engine", "import artifacts.engine", "pure-only-itself-and-lib"),
    Violation("xworkmate.health", "import plans.selectors", "kernel-imports-no-app"),
    Violation("xworkmate.admin", "from gateway import models", "kernel-imports-no-app"),
    Violation(
        "plans.selectors", "from gateway.models import TaskRun", "apps-use-services-and-selectors"
    ),
    Violation("gateway.hooks", "import artifacts.api", "apps-use-services-and-selectors"),
    Violation("longrun.apps", "import plans.selectors", "plans-longrun-independent"),
    # D-K19: the write path and the reads never import an entry point...
    Violation("gateway.services", "import gateway.methods", "gateway-rooms"),
    Violation("artifacts.services", "import artifacts.api", "artifacts-rooms"),
    Violation("plans.services", "from plans import views", "plans-rooms"),
    Violation("plans.selectors", "import plans.admin", "plans-rooms"),
    Violation("longrun.services", "import longrun.tasks", "longrun-rooms"),
    Violation("longrun.selectors", "import longrun.cli", "longrun-rooms"),
    Violation("xworkmate.delivery.selectors", "import xworkmate.delivery.api", "delivery-rooms"),
    Violation("gateway.schemas", "from gateway import methods", "gateway-rooms"),
    Violation("plans.scheduler", "import plans.tasks", "plans-rooms"),
    Violation("longrun.selectors", "from longrun.operations import table", "longrun-rooms"),
    Violation("longrun.monitors.watchdog", "import longrun.api", "longrun-rooms"),
    Violation("longrun._rows", "from longrun import admin", "longrun-rooms"),
    # ...the ground imports neither of the rooms above it...
    Violation("gateway.models", "from gateway import selectors", "gateway-rooms"),
    Violation("artifacts.conf", "import artifacts.services", "artifacts-rooms"),
    Violation("plans.models", "import plans.services", "plans-rooms"),
    Violation("longrun.models", "from longrun import services", "longrun-rooms"),
    Violation(
        "xworkmate.delivery.channels.webhook", "from xworkmate.delivery import services",
        "delivery-rooms",
    ),
    # ...and a module without a room breaks its app's contract until it is given one.
    Violation("plans.shortcuts", "import plans.models", "plans-rooms", new=True),
)


def _source(root: Path, module: str) -> Path:
    base = root.joinpath(*module.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


@pytest.fixture(scope="module")
def copy_of_the_code(tmp_path_factory):
    root = tmp_path_factory.mktemp("code")
    for package in PACKAGES:
        shutil.copytree(ROOT / package, root / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


@pytest.mark.parametrize(
    "violation", VIOLATIONS, ids=[f"{v.proves}:{v.module}" for v in VIOLATIONS]
)
def test_a_deliberate_violation_breaks_its_contract(copy_of_the_code, violation):
    target = _source(copy_of_the_code, violation.module)
    # A moved or renamed module must move its case with it, not pass unnoticed.
    assert target.exists() != violation.new, (violation.module, target)
    original = None if violation.new else target.read_text(encoding="utf-8")
    target.write_text((original or "") + f"\n{violation.line}  # noqa\n", encoding="utf-8")
    try:
        result = _lint(copy_of_the_code)
    finally:
        if original is None:
            target.unlink()
        else:
            target.write_text(original, encoding="utf-8")
    assert result.returncode == 1, result.stdout + result.stderr
    by_name = {name: contract_id for contract_id, name in CONTRACTS.items()}
    # A summary row is `<name> BROKEN`, followed by `(n ignored imports)` where some were.
    broken = {
        by_name[found.group(1)] for row in result.stdout.splitlines()
        if (found := re.fullmatch(r"(.+) BROKEN(?: \(\d+ ignored imports?\))?", row))
    }
    assert broken == {violation.proves} | violation.also, result.stdout


def test_every_contract_has_a_deliberate_violation():
    """A new contract needs a case above that breaks it, or nothing proves it can fail."""
    assert len(set(CONTRACTS.values())) == len(CONTRACTS), "two contracts share a name"
    assert {v.proves for v in VIOLATIONS} == set(CONTRACTS)
    assert {contract for v in VIOLATIONS for contract in v.also} <= set(CONTRACTS)


def test_every_app_module_others_may_not_use_is_in_the_app_contract():
    """New models / api / views / admin / tasks / urls / command-line modules must join the
    D-K3 contract."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contract = next(
        c for c in config["tool"]["importlinter"]["contracts"]
        if c["id"] == "apps-use-services-and-selectors"
    )
    apps = {name: ROOT / name for name in ("gateway", "artifacts", "plans", "longrun")}
    private = (
        "models", "api", "views", "admin", "tasks", "methods", "hooks",
        "urls", "management", "cli", "operations",
    )
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
