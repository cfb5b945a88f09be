"""Admin sign-in throttling over real HTTP (D-K14): gunicorn with three workers, on PostgreSQL.

The count lives in the database, so a guessing run spread over every worker
is counted as one; behind the configured proxy header each client address has
its own count; bearer keys keep working from a locked address; the unlock
command, run as an operator runs it, lifts the lock.
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

import pytest
from axes.models import AccessAttempt
from django.contrib.auth.models import User

from tests.conftest import ROOT
from tests.integration.conftest import database_url, running_gunicorn
from xworkmate.services import api_key_create

CONFIG = '[admin]\nclient_ip_header = "X-Real-IP"\n'


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # a sign-in's 302 is the answer itself
        return None


def _sign_in(base: str, username: str, password: str, address: str) -> tuple[int, str]:
    """GET the login form, POST it with its CSRF token, as a browser behind the proxy would."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), _NoRedirect)
    with opener.open(f"{base}/admin/login/", timeout=30) as form:
        found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.read().decode())
    assert found is not None, "the login form has no CSRF token"
    token = found.group(1)
    body = urllib.parse.urlencode({"csrfmiddlewaretoken": token, "username": username,
                                   "password": password, "next": "/admin/"}).encode()
    request = urllib.request.Request(f"{base}/admin/login/", data=body, method="POST",
                                     headers={"X-Real-IP": address})
    try:
        with opener.open(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture
def server(real_services, tmp_path):
    with running_gunicorn(tmp_path, CONFIG, workers=3) as base:
        yield base, tmp_path


def test_it_locks_across_workers_per_address_and_unlocks_from_the_command_line(server, settings):
    base, tmp_path = server
    # Hashed as the service hashes (the unit tests' MD5 is not one gunicorn's settings read).
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]
    User.objects.create_superuser("grace", "", "grace-pw-2026")
    statuses = [_sign_in(base, "grace", f"guess-{n}", "192.0.2.10")[0] for n in range(5)]
    assert statuses == [200, 200, 200, 200, 429]
    status, page = _sign_in(base, "grace", "grace-pw-2026", "192.0.2.10")
    # The service's default language, zh-hans, for a browser that asks for none.
    assert status == 429 and "此用户从您的地址登录已被锁定 15 分钟" in page
    assert list(AccessAttempt.objects.values_list("ip_address", "failures_since_start")) == [
        ("192.0.2.10", 5)
    ]
    assert _sign_in(base, "grace", "grace-pw-2026", "192.0.2.11")[0] == 302  # another client

    _, token = api_key_create(name="bridge", scopes=["gateway:write"])
    ping = urllib.request.Request(f"{base}/api/ping", headers={
        "Authorization": f"Bearer {token}", "X-Real-IP": "192.0.2.10"})
    with urllib.request.urlopen(ping, timeout=30) as response:
        assert response.status == 200 and json.loads(response.read()) == {"ok": True}

    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "xworkmate.settings",
           "XWORKMATE_CONFIG": str(tmp_path / "xworkmate.toml"),
           "XWORKMATE_HOME": str(tmp_path / "home"), "DATABASE_URL": database_url()}
    unlocked = subprocess.run(
        [sys.executable, "manage.py", "xworkmate", "unlock", "--address", "192.0.2.10"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert unlocked.returncode == 0, unlocked.stderr
    assert unlocked.stdout.strip() == "unlocked (address 192.0.2.10): removed 1 failed sign-in record(s)"
    assert _sign_in(base, "grace", "grace-pw-2026", "192.0.2.10")[0] == 302
