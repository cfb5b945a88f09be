"""Shared fixtures: API keys for an owner, a read-only teammate and an outsider.

Following the healthchecks test style, each test gets keys with different
scopes so every endpoint can be checked for who may and who may not call it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

# Re-exported: the tests have always taken it from here.
from tests.support.ports import free_port as free_port
from xworkmate import methods as gateway
from xworkmate.lib.errors import ConflictError, InputError
from xworkmate.services import api_key_create


def subprocess_database_url() -> str:
    """DATABASE_URL of this test run's database, for processes a test starts."""
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    return f"postgresql://{db['USER']}:{db['PASSWORD']}@{db['HOST'] or 'localhost'}:{db['PORT'] or 5432}/{db['NAME']}"


def manage(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run `manage.py` in a subprocess against this test run's database."""
    full_env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "DATABASE_URL": subprocess_database_url()}
    return subprocess.run(
        [sys.executable, "manage.py", *args], capture_output=True, text=True, check=False,
        env={**full_env, **(env or {})}, cwd=ROOT, timeout=120,
    )


ROOT = Path(__file__).resolve().parent.parent


def configure(settings: Any, section: str, **values: Any) -> None:
    """Set config values of one section for this test, as the config file would."""
    config = settings.XWORKMATE
    # The typed section (xworkmate.config.Section) is what the code reads; a
    # name that is not one of its keys changes nothing, as before.
    typed = config.sections[section]
    known = {f.name for f in dataclasses.fields(typed)}
    sections = {
        **config.sections,
        section: dataclasses.replace(typed, **{k: v for k, v in values.items() if k in known}),
    }
    settings.XWORKMATE = dataclasses.replace(config, sections=sections)



def copy_checkout(target: Path) -> Path:
    """The files a clone would hold (`git ls-files`), as they are in the working tree."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():  # not deleted in the working tree
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def stop_group(proc: subprocess.Popen[Any], *, timeout: float) -> None:
    """What Ctrl-C does to a foreground service: SIGTERM its process group, then SIGKILL
    it if it is still there after `timeout` seconds. The child must have been started
    with `start_new_session=True`."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def url_routes() -> Iterator[tuple[str, URLPattern]]:
    """(route, pattern) of every URL the service serves, includes walked, in URLconf order."""

    def walk(patterns: list[Any], prefix: str) -> Iterator[tuple[str, URLPattern]]:
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, route)
            elif isinstance(pattern, URLPattern):
                yield route, pattern

    return walk(get_resolver().url_patterns, "")


def csrf_token(client: Client, page_url: str) -> str:
    """The CSRF token of the form an admin page carries, as a browser would post it."""
    page = client.get(page_url).content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert token, f"{page_url} carries a CSRF token"
    return token.group(1)


@dataclasses.dataclass
class SkillRun:
    """What a skill's script did: exit code, stdout, stderr."""

    code: int
    stdout: str
    stderr: str

    @property
    def json(self) -> Any:
        return json.loads(self.stdout)


def run_skill_script(
    script: Path,
    url: str,
    key: str,
    *args: str,
    isolated: bool = True,
    stdin: str | None = None,
) -> SkillRun:
    """A skill's script as an agent's workspace runs it: no site packages, no inherited
    environment but PATH and a C locale, and the service's URL and key when given.

    `isolated` is -I; without it (-E -s) the script's own folder stays on the path,
    for wrappers that import a sibling module.
    """
    env = {"PATH": os.environ.get("PATH", ""), "LC_ALL": "C", "LANG": "C"}
    if url:
        env["XWORKMATE_URL"] = url
    if key:
        env["XWORKMATE_API_KEY"] = key
    flags = ["-I", "-S"] if isolated else ["-E", "-s", "-S"]
    done = subprocess.run(
        [sys.executable, *flags, str(script), *args],
        input=None if stdin is None else stdin.encode("utf-8"),
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    return SkillRun(done.returncode, done.stdout.decode("utf-8"), done.stderr.decode("utf-8"))


def http_status(url: str) -> int:
    """The HTTP status a GET of `url` answers; 0 when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


class ApiClient:
    """A Django test client that sends one bearer key and JSON bodies."""

    def __init__(self, token: str | None) -> None:
        self.client = Client()
        self.token = token

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def post(self, path: str, body: Any = None, *, raw: bytes | None = None) -> Any:
        data = raw if raw is not None else json.dumps({} if body is None else body)
        return self.client.post(
            path, data=data, content_type="application/json", headers=self._headers()
        )

    def get(self, path: str) -> Any:
        return self.client.get(path, headers=self._headers())

    def put(self, path: str, body: Any = None, *, raw: str | None = None) -> Any:
        data = raw if raw is not None else json.dumps({} if body is None else body)
        return self.client.put(
            path, data=data, content_type="application/json", headers=self._headers()
        )


@pytest.fixture
def make_client(db: None) -> Callable[..., ApiClient]:
    counter = iter(range(1000))

    def make(*scopes: str, name: str | None = None) -> ApiClient:
        if not scopes:
            return ApiClient(None)
        _, token = api_key_create(name=name or f"key-{next(counter)}", scopes=list(scopes))
        return ApiClient(token)

    return make


@pytest.fixture
def owner(make_client: Callable[..., ApiClient]) -> ApiClient:
    return make_client("gateway:write", "plans:write", "longrun:write", name="owner")


@pytest.fixture
def reader(make_client: Callable[..., ApiClient]) -> ApiClient:
    return make_client("gateway:read", name="reader")


@pytest.fixture
def outsider(make_client: Callable[..., ApiClient]) -> ApiClient:
    return make_client("plans:read", name="outsider")


@pytest.fixture
def anonymous() -> ApiClient:
    return ApiClient(None)


@pytest.fixture
def test_methods() -> Iterator[list[str]]:
    """Two throw-away gateway methods (one read, one write) for envelope tests."""

    def echo(call: gateway.GatewayCall) -> dict[str, Any]:
        if call.params.get("fail") == "conflict":
            raise ConflictError("mapping conflict: thread already mapped")
        if call.params.get("fail") == "invalid":
            raise InputError("openclawSessionKey required")
        return {"method": call.method, "params": call.params, "key": call.caller.key and call.caller.key.name}

    names = ["test.echo.read", "test.echo.write"]
    conflict = ((409, "fail: conflict"),)  # echo's own errors, for the OpenAPI schema
    for name, scope, summary in ((names[0], "gateway:read", "echo (read)"),
                                 (names[1], "gateway:write", "echo (write)")):
        gateway.register_method(gateway.GatewayMethod(name, echo, scope, summary, errors=conflict))
    yield names
    for name in names:
        gateway.unregister_method(name)


@pytest.fixture(autouse=True)
def _fresh_send_times() -> Iterator[None]:
    """Each test starts with no channel's send times learned. The delivery senders
    remember them for the process (services.senders), so a test whose receiver was
    slow made a later test's batch open a connection for each begun send."""
    _forget_send_times()
    yield
    _forget_send_times()


def _forget_send_times() -> None:
    # Only once the module is loaded can it have learned anything.
    senders = sys.modules.get("xworkmate.delivery.services.senders")
    if senders is not None:
        senders._typical.clear()
