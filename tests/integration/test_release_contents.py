"""Issue 20: what the release files hold (D-K29).

Built once per run by `scripts/dist` (tests/integration/release.py). The wheel
carries everything the service reads at run time; the sdist what a checkout needs
to build, run and deploy; SHA256SUMS lists exactly the three files beside it.
"""

from __future__ import annotations

import tarfile
import zipfile

from xworkmate import __version__

RUNTIME_DATA = (
    "xworkmate/templates/admin/xworkmate_index.html",
    "xworkmate/templates/admin/xworkmate_locked_out.html",
    "plans/templates/admin/plans/entry_review.html",
    "longrun/templates/admin/longrun/longtask/change_list.html",
    "xworkmate/locale/zh_Hans/LC_MESSAGES/django.mo",
    "xworkmate/config/example.toml",
    "plans/skill/SKILL.md",
    "longrun/skill/SKILL.md",
)


def test_the_wheel_carries_templates_catalogue_config_skills_and_the_command(release_files):
    with zipfile.ZipFile(release_files.wheel) as wheel:
        names = set(wheel.namelist())
        entry_points = wheel.read(f"xworkmate-{__version__}.dist-info/entry_points.txt").decode()
        metadata = wheel.read(f"xworkmate-{__version__}.dist-info/METADATA").decode()
    missing = [name for name in RUNTIME_DATA if name not in names]
    assert missing == []
    assert "xworkmate = xworkmate.console:main" in entry_points
    assert f"\nVersion: {__version__}\n" in metadata
    # Nothing of the checkout's tests, benchmarks or data home.
    assert not [n for n in names if n.startswith(("tests/", "bench/", "var/"))]


def test_the_sdist_carries_what_a_checkout_builds_runs_and_deploys_with(release_files):
    sdist = release_files.sums.parent / f"xworkmate-{__version__}.tar.gz"
    prefix = f"xworkmate-{__version__}/"
    with tarfile.open(sdist) as archive:
        names = {name.removeprefix(prefix) for name in archive.getnames()}
    for name in (*RUNTIME_DATA, "manage.py", "xworkmate.example.toml", "Makefile", "README.md",
                 "pyproject.toml", "deploy/Procfile", "deploy/compose.yaml", "deploy/Dockerfile",
                 "deploy/systemd/xworkmate-web.service", "scripts/dist", "docs/decisions/kernel.md"):
        assert name in names, name


def test_sha256sums_names_the_three_release_files(release_files):
    listed = sorted(line.split("  ", 1)[1]
                    for line in release_files.sums.read_text().splitlines())
    assert listed == sorted([release_files.runtime.name, release_files.wheel.name,
                             f"xworkmate-{__version__}.tar.gz"])
