"""The release pipeline, the deployment files and the version (issue 20, D-K29).

Parsed, not run: the workflow runs on GitHub and the compose file needs a Docker
daemon, neither of which this machine has. Both are validated against their
published schemas (check-jsonschema's vendored copies), and what the project
relies on (the three chained stages, the version handed from publish to deploy,
one beat, every process through `xworkmate serve --only`) is asserted. The
Procfile runs for real under honcho in tests/integration/test_serve.py.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT
from xworkmate import __version__

WORKFLOW = ROOT / ".github" / "workflows" / "pipeline.yml"
COMPOSE = ROOT / "deploy" / "compose.yaml"
PROCFILE = ROOT / "deploy" / "Procfile"
CHECK_JSONSCHEMA = Path(sys.executable).parent / "check-jsonschema"


def _yaml(path: Path) -> dict[str, Any]:
    loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def _github_filter(pattern: str) -> re.Pattern[str]:
    """A tag filter of a workflow as a regex (GitHub's syntax: `+`, `*`, `[...]`)."""
    out = ""
    for char in pattern:
        out += {"*": "[^/]*", ".": r"\.", "?": "."}.get(char, char)
    return re.compile(out)


# --- the version ------------------------------------------------------------------------


def test_the_version_is_a_calendar_version_with_one_home():
    assert re.fullmatch(r"20\d\d\.(?:[1-9]|1[0-2])\.(?:0|[1-9]\d*)", __version__)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"]
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "xworkmate.__version__"}
    # The only literal of it in the code base is __init__'s.
    literal = re.compile(re.escape(__version__))
    holders = [
        str(path.relative_to(ROOT))
        for folder in ("xworkmate", "gateway", "artifacts", "plans", "longrun", "deploy", "scripts")
        for path in (ROOT / folder).rglob("*")
        if path.is_file() and path.suffix in {".py", ".toml", ".yaml", ".service", ""}
        and literal.search(path.read_text(encoding="utf-8", errors="replace"))
    ]
    assert holders == ["xworkmate/__init__.py"]


def test_the_console_script_and_the_healthz_carry_it(client, db):
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["scripts"]["xworkmate"] == "xworkmate.console:main"
    assert client.get("/healthz").json()["version"] == __version__


# --- the pipeline -----------------------------------------------------------------------


def test_the_workflow_validates_against_the_github_workflow_schema():
    result = subprocess.run(
        [str(CHECK_JSONSCHEMA), "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)],
        capture_output=True, text=True, check=False, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_workflow_triggers_on_pushes_pull_requests_tags_releases_and_by_hand():
    workflow = _yaml(WORKFLOW)
    on = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert on["push"]["branches"] == ["main"]
    tags = [_github_filter(tag) for tag in on["push"]["tags"]]
    for tag in (__version__, f"v{__version__}", "2027.1.0"):
        assert any(p.fullmatch(tag) for p in tags), tag
    for not_a_release in ("2026.12", "latest", "v2026.12.0-rc"):
        assert not any(p.fullmatch(not_a_release) for p in tags), not_a_release
    assert "pull_request" in on
    assert on["release"]["types"] == ["published"]
    assert "version" in on["workflow_dispatch"]["inputs"]
    # One run per ref; only a pull request's older run is cancelled.
    assert "github.ref" in workflow["concurrency"]["group"]
    assert "pull_request" in workflow["concurrency"]["cancel-in-progress"]


def test_the_three_stages_are_chained_and_the_version_flows_from_publish_to_deploy():
    jobs = _yaml(WORKFLOW)["jobs"]
    assert list(jobs) == ["build", "publish", "deploy"]
    build, publish, deploy = jobs["build"], jobs["publish"], jobs["deploy"]
    # build: every push and pull request, no condition, nothing before it.
    assert "needs" not in build and "if" not in build
    # publish: after build, only for a release, a manual run or a tag.
    assert publish["needs"] == "build"
    for trigger in ("'release'", "'workflow_dispatch'", "refs/tags/"):
        assert trigger in publish["if"]
    # deploy: after publish, with publish's output as its version.
    assert deploy["needs"] == "publish"
    assert "needs.publish.result == 'success'" in deploy["if"]
    assert deploy["env"]["VERSION"] == "${{ needs.publish.outputs.version }}"
    step_ids = {step.get("id") for step in publish["steps"]}
    output = publish["outputs"]["version"]
    assert re.fullmatch(r"\$\{\{ steps\.(\w+)\.outputs\.version \}\}", output)
    assert output.split(".")[1] in step_ids
    assert deploy["concurrency"]["cancel-in-progress"] is False


def test_the_build_stage_tests_on_postgresql_and_redis_and_checks_the_release_files():
    build = _yaml(WORKFLOW)["jobs"]["build"]
    assert build["services"]["postgres"]["image"].startswith("postgres:")
    assert build["services"]["redis"]["image"].startswith("redis:")
    assert build["env"]["TEST_DATABASE_URL"].startswith("postgresql://")
    assert build["env"]["TEST_BROKER_URL"].startswith("redis://")
    runs = "\n".join(step.get("run", "") for step in build["steps"])
    assert "make test" in runs and "make dist" in runs
    assert "sha256sum -c SHA256SUMS" in runs and "twine check" in runs
    # The make targets it calls exist.
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in re.findall(r"make (\w+)", runs):
        assert re.search(rf"^{target}:", makefile, re.M), target
    publish_runs = "\n".join(s.get("run", "") for s in _yaml(WORKFLOW)["jobs"]["publish"]["steps"])
    # A tag that is not the package's version never publishes.
    assert "does not match the package version" in publish_runs


# --- the deployment files -----------------------------------------------------------------


def test_the_compose_file_validates_against_the_compose_schema():
    result = subprocess.run(
        [str(CHECK_JSONSCHEMA), "--builtin-schema", "vendor.compose-spec", str(COMPOSE)],
        capture_output=True, text=True, check=False, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _service(compose: dict[str, Any], name: str) -> dict[str, Any]:
    """A service with the `<<:` merge of the shared block applied (PyYAML applies it)."""
    service: dict[str, Any] = compose["services"][name]
    return service


def test_the_compose_file_runs_postgresql_redis_the_migrations_web_worker_and_one_beat():
    compose = _yaml(COMPOSE)
    assert set(compose["services"]) == {"postgres", "redis", "migrate", "web", "worker", "beat"}
    for name in ("postgres", "redis"):
        assert "healthcheck" in _service(compose, name)
    migrate = _service(compose, "migrate")
    assert migrate["command"] == ["xworkmate", "manage", "migrate", "--noinput"]
    assert migrate["restart"] == "no"
    for role in ("web", "worker", "beat"):
        service = _service(compose, role)
        assert service["command"][:4] == ["xworkmate", "serve", "--only", role]
        env = service["environment"]
        assert env["DATABASE_URL"].startswith("postgresql://") and "@postgres:" in env["DATABASE_URL"]
        assert env["CELERY_BROKER_URL"].startswith("redis://redis:")
        # No default secret: compose refuses to start without them (`:?`).
        assert env["SECRET_KEY"].startswith("${SECRET_KEY:?")
        assert env["XWORKMATE_ARTIFACT_REF_SIGNING_SECRET"].startswith(
            "${XWORKMATE_ARTIFACT_REF_SIGNING_SECRET:?")
        needs = service["depends_on"]
        assert needs["migrate"]["condition"] == "service_completed_successfully"
        assert needs["postgres"]["condition"] == needs["redis"]["condition"] == "service_healthy"
        assert service["volumes"] == ["home:/var/lib/xworkmate"]
    assert "deploy" not in _service(compose, "beat")  # no replicas: one beat
    web = _service(compose, "web")
    assert "/healthz" in " ".join(web["healthcheck"]["test"])
    assert web["command"][web["command"].index("--bind") + 1] == "0.0.0.0:8000"


def test_the_dockerfile_installs_the_package_and_runs_the_installed_command():
    text = (ROOT / "deploy" / "Dockerfile").read_text(encoding="utf-8")
    assert re.search(r"^FROM python:3\.11", text, re.M)
    assert "pip install --no-cache-dir /src" in text and "[dev]" not in text
    assert re.search(r"^USER xworkmate$", text, re.M)
    assert 'CMD ["xworkmate", "serve", "--only", "web"' in text
    ignored = (ROOT / "deploy" / "Dockerfile.dockerignore").read_text(encoding="utf-8").split()
    assert {".venv", ".git", "var", "deploy/.env"} <= set(ignored)


def test_the_procfile_has_web_worker_and_one_beat_through_serve():
    lines = [
        line for line in PROCFILE.read_text(encoding="utf-8").splitlines()
        if line and not line.startswith("#")
    ]
    processes = dict(line.split(": ", 1) for line in lines)
    assert list(processes) == ["web", "worker", "beat"]
    for role, command in processes.items():
        assert shlex.split(command)[:4] == ["xworkmate", "serve", "--only", role]
    assert "--migrate" in processes["web"]


@pytest.mark.parametrize("unit", ["xworkmate-web", "xworkmate-worker", "xworkmate-beat"])
def test_the_units_procfile_and_compose_file_start_the_same_processes(unit):
    role = unit.split("-")[1]
    text = (ROOT / "deploy" / "systemd" / f"{unit}.service").read_text(encoding="utf-8")
    start = next(line for line in text.splitlines() if line.startswith("ExecStart="))
    assert f"xworkmate serve --only {role}" in start
    assert f"xworkmate serve --only {role}" in PROCFILE.read_text(encoding="utf-8")
