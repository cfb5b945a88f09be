"""The release files built once per test session, and the service as an installed wheel
answers its pages (issue 20).

`release_files` runs `scripts/dist` (what `make dist` runs) on a copy of the checkout,
so the tests install exactly what a release holds: the wheel, the runtime tarball and
SHA256SUMS. `admin_page` signs in to a running service's admin the way a browser does
(the CSRF cookie and token), in the language asked for.
"""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import copy_checkout
from xworkmate import __version__


@dataclass(frozen=True)
class ReleaseFiles:
    checkout: Path  # the copy the files were built in; dist/ is inside it
    wheel: Path
    runtime: Path
    sums: Path


@pytest.fixture(scope="session")
def release_files(tmp_path_factory: pytest.TempPathFactory) -> ReleaseFiles:
    checkout = copy_checkout(tmp_path_factory.mktemp("release") / "checkout")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    built = subprocess.run(
        ["bash", "scripts/dist"], cwd=checkout, env=env | {"PY": sys.executable},
        capture_output=True, text=True, check=False, timeout=900,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    dist = checkout / "dist"
    runtime = list(dist.glob(f"xworkmate-{__version__}-runtime-*.tar.gz"))
    assert len(runtime) == 1, sorted(p.name for p in dist.iterdir())
    return ReleaseFiles(
        checkout=checkout,
        wheel=dist / f"xworkmate-{__version__}-py3-none-any.whl",
        runtime=runtime[0],
        sums=dist / "SHA256SUMS",
    )


def admin_page(base: str, path: str, *, username: str, password: str, language: str) -> str:
    """The admin page at `path` after signing in, in `language` (Accept-Language)."""
    opener = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
    )
    headers = {"Accept-Language": language}
    login_url = f"{base}/admin/login/?next={urllib.parse.quote(path)}"
    with opener.open(urllib.request.Request(login_url, headers=headers), timeout=15) as answer:
        form = answer.read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
    assert token, form[:500]
    body = urllib.parse.urlencode({
        "csrfmiddlewaretoken": token[1], "username": username, "password": password,
        "next": path,
    }).encode()
    request = urllib.request.Request(login_url, data=body, headers=headers)
    with opener.open(request, timeout=15) as answer:
        assert answer.geturl().endswith(path), f"not signed in: landed on {answer.geturl()}"
        page: str = answer.read().decode()
        return page


def api_get(base: str, path: str, token: str) -> tuple[int, object]:
    request = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=15) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.fixture(scope="session")
def installed_release(release_files: ReleaseFiles, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The runtime tarball, checked against SHA256SUMS and installed by its own install.sh
    with no index (every dependency must be in the tarball); the venv's bin folder."""
    checked = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=release_files.sums.parent,
                             capture_output=True, text=True, check=False, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count(": OK") == 3, checked.stdout
    where = tmp_path_factory.mktemp("runtime")
    subprocess.run(["tar", "-xzf", str(release_files.runtime), "-C", str(where)], check=True)
    (unpacked,) = where.iterdir()
    assert unpacked.name == f"xworkmate-{__version__}"
    for part in ("install.sh", "xworkmate.example.toml", "README.md", "deploy/Procfile",
                 "deploy/compose.yaml", "deploy/systemd/xworkmate-web.service"):
        assert (unpacked / part).is_file(), part
    venv = where / "venv"
    # No index: a dependency missing from the tarball fails the install here.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")} | {
        "PIP_NO_INDEX": "1", "PIP_CONFIG_FILE": os.devnull,
    }
    installed = subprocess.run([str(unpacked / "install.sh"), str(venv)], env=env,
                               capture_output=True, text=True, check=False, timeout=600)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert installed.stdout.strip().endswith(f"xworkmate {__version__}")
    return venv / "bin"
