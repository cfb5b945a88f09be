"""Issues 19 and 20: the README's Production block, run for real on PostgreSQL and Redis.

The block comes out of README.md (tests/readme_production.py) and runs in a copy of
the checkout whose dist/ holds the release files (`scripts/dist`): a fresh venv gets
the wheel (no dev extras, not editable: only what the wheel carries), the example
config is written to $XWORKMATE_CONFIG by the installed command as documented, then
migrate, bootstrap and `xworkmate serve` with two Celery worker processes (in the
background). From outside the checkout, the installed service must then answer:
/healthz with PostgreSQL, Redis, the beat lease and its processes (which it would not
if the written example masked the URLs, D-K21), the admin's pages in English and in
Chinese (its templates and catalogue are package data), and the API with the key
bootstrap printed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

from django.conf import settings

from tests.conftest import ROOT, free_port
from tests.gateway.test_readme_example import fresh_env
from tests.integration.conftest import database_url, health_json, pid_alive, wait_for
from tests.integration.release import admin_page, api_get
from tests.readme_production import production_block, production_script
from xworkmate import __version__

ADMIN_PASSWORD = "readme-production-admin-password-7Qx"


def _stop(pids: list[int]) -> None:
    for pid in pids:
        if pid_alive(pid):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 40
    while any(pid_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in pids:
        if pid_alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_the_readme_production_block_runs_the_installed_wheel_on_postgresql_and_redis(
    real_services, release_files, tmp_path
):
    (tmp_path / "user").mkdir()
    port = free_port()
    pids_file = tmp_path / "pids"
    script = production_script(
        production_block(), venv=tmp_path / "venv", database_url=database_url(),
        broker_url=settings.CELERY_BROKER_URL, home=tmp_path / "home",
        config_dir=tmp_path / "etc", port=port, logs=tmp_path, pids=pids_file,
    )
    env = fresh_env(tmp_path / "user", tmp_path) | {"XWORKMATE_ADMIN_PASSWORD": ADMIN_PASSWORD}
    pids: list[int] = []
    try:
        result = subprocess.run(["bash", "-c", script], cwd=release_files.checkout, env=env,
                                capture_output=True, text=True, timeout=600, check=False)
        if pids_file.exists():
            pids = [int(line) for line in pids_file.read_text().split()]
        assert result.returncode == 0, result.stdout + result.stderr
        assert len(pids) == 1

        def logs() -> str:
            return "\n".join(p.read_text(errors="replace") for p in tmp_path.glob("service-*.log"))

        # The installed package runs, not the checkout: its files are the venv's.
        where = subprocess.run(
            [str(tmp_path / "venv" / "bin" / "python"), "-c",
             "import xworkmate, importlib.util as u; print(xworkmate.__file__); "
             "print(u.find_spec('pytest') is None)"],
            cwd=tmp_path, capture_output=True, text=True, check=True,
        ).stdout.split()
        assert where[0].startswith(str(tmp_path / "venv")) and where[1] == "True"
        # The config is the example, written where the block says.
        written = tmp_path / "etc" / "xworkmate.toml"
        assert written.read_text() == (ROOT / "xworkmate.example.toml").read_text()

        base = f"http://127.0.0.1:{port}"
        health = wait_for(
            lambda: (h := health_json(base)) is not None and h["status"] == "ok" and h,
            timeout=120, what="/healthz ok from the README's production service",
        )
        assert isinstance(health, dict), logs()
        assert health["version"] == __version__
        assert health["database"]["vendor"] == "postgresql"
        assert health["broker"]["transport"] == "redis"
        assert health["beat_lease"]["holder"]
        assert set(health["processes"]) == {"web", "beat", "worker-1", "worker-2"}
        assert all(child["running"] for child in health["processes"].values())

        # The admin's pages, from the wheel's templates and catalogue, in both languages.
        for language, header, overview in (("en", "xworkmate administration", "Overview"),
                                           ("zh-hans", "xworkmate 管理后台", "概览")):
            page = admin_page(base, "/admin/", username="admin", password=ADMIN_PASSWORD,
                              language=language)
            assert header in page and overview in page, (language, page[:800])
        # The API, with the key bootstrap printed once.
        lines = result.stdout.splitlines()
        token = lines[lines.index("created API key 'local' (all write scopes); shown once:") + 1]
        status, body = api_get(base, "/api/plans", token)
        assert status == 200, body
        assert pid_alive(pids[0]), logs()
    finally:
        _stop(pids)
