"""Admin sign-in throttling (D-K14): per username and address, a clear page, an unlock command.

Every test signs in through the admin's real login form with Django's test
client, from addresses chosen per request (REMOTE_ADDR), as an attacker
guessing a password would. The failure limit is the configured default, 5.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
import time_machine
from axes.models import AccessAttempt
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from tests.conftest import ApiClient, configure
from tests.xworkmate.test_config import parse, problems
from xworkmate.services import api_key_create

LIMIT = 5
RIGHT = "alice-pw-2026"
LOCKED_EN = (
    "Too many failed sign-ins: after 5 failed attempts, signing in as this user from your "
    "address is locked for 15 minutes."
)
LOCKED_ZH = "登录失败次数过多：失败 5 次后，此用户从您的地址登录已被锁定 15 分钟。"


@pytest.fixture
def alice(db):
    return User.objects.create_superuser("alice", "", RIGHT)


@dataclass
class Attempt:
    response: Any
    signed_in: bool  # the admin opens for this browser session afterwards


def sign_in(username: str, password: str, address: str = "10.0.0.1", **meta: Any) -> Attempt:
    """One attempt through the login form from `address`, in a fresh browser session.

    `meta` adds request headers as the server passes them on (HTTP_X_FORWARDED_FOR=...).
    """
    client = Client()
    response = client.post(
        "/admin/login/",
        {"username": username, "password": password, "next": "/admin/"},
        REMOTE_ADDR=address,
        **meta,
    )
    return Attempt(response, client.get("/admin/", REMOTE_ADDR=address).status_code == 200)


def fail(times: int, username: str = "alice", address: str = "10.0.0.1", **meta: Any) -> list[Attempt]:
    return [sign_in(username, f"guess-{n}", address, **meta) for n in range(times)]


def is_locked_out(attempt: Attempt) -> bool:
    response = attempt.response
    return response.status_code == 429 and 'id="xworkmate-locked-out"' in response.content.decode()


def test_it_locks_a_username_at_an_address_after_the_limit_even_with_the_right_password(alice):
    before = fail(LIMIT - 1)
    assert [r.response.status_code for r in before] == [200] * (LIMIT - 1)  # the form again, with its error
    assert not any(is_locked_out(r) for r in before)
    [last] = fail(1)
    assert is_locked_out(last)
    page = last.response.content.decode()
    assert LOCKED_EN in page
    assert "Try again later, or ask an administrator to lift the lock." in page
    assert last.response["Retry-After"] == "900"
    right = sign_in("alice", RIGHT)
    assert is_locked_out(right) and not right.signed_in


def test_the_lockout_page_speaks_chinese_to_a_chinese_browser(alice):
    fail(LIMIT - 1)
    [last] = fail(1, HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert is_locked_out(last)
    page = last.response.content.decode()
    assert LOCKED_ZH in page and "登录已锁定" in page and "请稍后再试，或请管理员解除锁定。" in page
    assert "Too many failed sign-ins" not in page


def test_it_locks_neither_another_user_nor_another_address(alice):
    User.objects.create_superuser("bob", "", "bob-pw-2026")
    fail(LIMIT)
    assert is_locked_out(sign_in("alice", RIGHT))
    assert sign_in("bob", "bob-pw-2026").signed_in  # same address, another user
    assert sign_in("alice", RIGHT, address="10.0.0.2").signed_in  # same user, another address


def test_it_counts_failures_for_unknown_usernames_too(db):
    # No difference an attacker could use to tell which usernames exist.
    fail(LIMIT, username="nobody")
    assert is_locked_out(sign_in("nobody", "x"))


def test_a_forged_forwarded_for_header_or_user_agent_does_not_escape_the_lock(alice):
    # The default reads the connection's address: the headers are the client's own words.
    for n in range(LIMIT):
        sign_in("alice", f"guess-{n}", HTTP_X_FORWARDED_FOR=f"198.51.100.{n}",
                HTTP_USER_AGENT=f"agent-{n}")
    assert is_locked_out(
        sign_in("alice", RIGHT, HTTP_X_FORWARDED_FOR="203.0.113.9", HTTP_USER_AGENT="fresh")
    )


def test_behind_a_proxy_it_counts_the_address_the_proxy_added(alice, settings):
    configure(settings, "admin", client_ip_header="X-Forwarded-For")
    proxy = "10.0.0.1"
    # The client's own part of the list (left of the proxy's entry) changes each time.
    for n in range(LIMIT):
        sign_in("alice", f"guess-{n}", proxy, HTTP_X_FORWARDED_FOR=f"198.51.100.{n}, 192.0.2.7")
    assert is_locked_out(sign_in("alice", RIGHT, proxy, HTTP_X_FORWARDED_FOR="1.1.1.1, 192.0.2.7"))
    assert AccessAttempt.objects.get().ip_address == "192.0.2.7"
    # Another client behind the same proxy is not locked.
    assert sign_in("alice", RIGHT, proxy, HTTP_X_FORWARDED_FOR="192.0.2.8").signed_in


def test_behind_a_proxy_a_request_without_a_usable_header_counts_under_its_peer(alice, settings):
    configure(settings, "admin", client_ip_header="X-Real-IP")
    fail(1, address="10.0.0.1")
    fail(2, address="10.0.0.1", HTTP_X_REAL_IP="not-an-address")
    fail(1, address="10.0.0.1", HTTP_X_REAL_IP="fe80::1%eth0")  # a zone no inet column holds
    [last] = fail(1, address="10.0.0.1", HTTP_X_REAL_IP="")
    assert is_locked_out(last)
    assert list(AccessAttempt.objects.values_list("ip_address", flat=True).distinct()) == ["10.0.0.1"]


def test_the_lock_ends_after_the_cooloff_and_tries_during_it_do_not_extend_it(alice):
    start = timezone.now()
    with time_machine.travel(start, tick=False) as clock:
        fail(LIMIT)
        clock.shift(timedelta(minutes=10))
        assert is_locked_out(sign_in("alice", RIGHT))
        assert is_locked_out(fail(1)[0])
        clock.shift(timedelta(minutes=5, seconds=1))  # 15 min after the failure that locked it
        assert sign_in("alice", RIGHT).signed_in


def test_a_successful_sign_in_forgets_the_earlier_failures(alice):
    fail(LIMIT - 1)
    assert sign_in("alice", RIGHT).signed_in
    results = fail(LIMIT - 1)
    assert not any(is_locked_out(r) for r in results)
    assert sign_in("alice", RIGHT).signed_in


def test_a_failed_sign_in_stores_no_password(alice):
    sign_in("alice", "my-secret-guess-2026")
    attempt = AccessAttempt.objects.get()
    stored = " ".join(str(getattr(attempt, f.attname)) for f in AccessAttempt._meta.concrete_fields)
    assert "my-secret-guess-2026" not in stored


# --- API keys are another door ----------------------------------------------------


def test_api_keys_keep_working_from_a_locked_address(alice, test_methods):
    fail(LIMIT, address="127.0.0.1")  # the test client's own address
    assert is_locked_out(sign_in("alice", RIGHT, address="127.0.0.1"))
    _, token = api_key_create(name="bridge", scopes=["gateway:write"])
    answer = ApiClient(token).post("/gateway/test.echo.write", {"hello": "bridge"})
    assert answer.status_code == 200 and answer.json()["ok"] is True


def test_wrong_api_keys_are_not_counted_as_admin_sign_ins(alice, test_methods):
    for _ in range(LIMIT * 2):
        refused = ApiClient("xwm_wrong").post("/gateway/test.echo.write", {})
        assert refused.status_code == 401
    assert not AccessAttempt.objects.exists()
    assert sign_in("alice", RIGHT, address="127.0.0.1").signed_in


# --- the unlock command -----------------------------------------------------------


def test_the_unlock_command_lifts_the_lock_of_one_username(alice, capsys):
    User.objects.create_superuser("bob", "", "bob-pw-2026")
    fail(LIMIT)
    fail(LIMIT, username="bob")
    call_command("xworkmate", "unlock", "--username", "alice")
    assert capsys.readouterr().out.strip() == (
        "unlocked (username 'alice'): removed 1 failed sign-in record(s)"
    )
    assert sign_in("alice", RIGHT).signed_in
    assert is_locked_out(sign_in("bob", "bob-pw-2026"))  # not named, still locked


def test_the_unlock_command_lifts_an_address_or_everything(alice, capsys):
    fail(LIMIT, address="2001:db8::1")
    fail(LIMIT, address="10.0.0.9")
    call_command("xworkmate", "unlock", "--address", "2001:DB8:0::1")  # as the lock wrote it
    assert "unlocked (address 2001:db8::1): removed 1" in capsys.readouterr().out
    assert sign_in("alice", RIGHT, address="2001:db8::1").signed_in
    assert is_locked_out(sign_in("alice", RIGHT, address="10.0.0.9"))
    call_command("xworkmate", "unlock", "--all")
    assert "unlocked (all): removed 1" in capsys.readouterr().out
    assert sign_in("alice", RIGHT, address="10.0.0.9").signed_in
    call_command("xworkmate", "unlock", "--username", "alice", "--address", "10.0.0.9")
    assert capsys.readouterr().out.strip() == (
        "nothing to unlock (username 'alice', address 10.0.0.9): no failed sign-ins recorded"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "unlock: give --username NAME, --address IP (or both), or --all"),
        (("--all", "--username", "alice"),
         "--all: lifts every lock, so it takes no --username or --address"),
        (("--address", "10.0.0.1/24"), "--address: must be an IPv4 or IPv6 address (got '10.0.0.1/24')"),
    ],
)
def test_the_unlock_command_refuses_unclear_arguments_and_lifts_nothing(alice, args, message):
    fail(LIMIT)
    with pytest.raises(CommandError) as refused:
        call_command("xworkmate", "unlock", *args)
    assert str(refused.value) == message
    assert is_locked_out(sign_in("alice", RIGHT))


# --- the [admin] section of the config -----------------------------------------------


def test_the_admin_section_has_its_defaults_and_takes_a_proxy_header():
    config = parse("")
    assert config.value("admin", "login_failure_limit") == 5
    assert config.value("admin", "login_cooloff") == timedelta(minutes=15)
    assert config.value("admin", "client_ip_header") == "REMOTE_ADDR"
    assert parse('[admin]\nclient_ip_header = "X-Real-IP"\n').value("admin", "client_ip_header") == "X-Real-IP"


def test_the_admin_section_refuses_what_would_not_lock_or_would_let_a_client_choose():
    assert problems(
        '[admin]\nlogin_failure_limit = 0\nlogin_cooloff = "0s"\nclient_ip_header = "X_Real_IP"\n'
    ) == [
        "admin.login_failure_limit: must be an integer >= 1 (got 0)",
        "admin.login_cooloff: '0s' must be longer than zero",
        "admin.client_ip_header: must be REMOTE_ADDR or an HTTP header name like "
        "X-Forwarded-For (got 'X_Real_IP')",
    ]
    assert problems('[admin]\nlogin_cooloff = "721h"\n') == [
        "admin.login_cooloff: must be at most 720h (got '721h')"
    ]
