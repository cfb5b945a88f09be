"""XWORKMATE_ADMIN_PASSWORD goes through Django's password validators (D-K14).

A weak one is refused with the validators' own messages, naming the variable,
before anything is created: no admin user, no API key, no workspace root, and
for the run not even the database.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.contrib.auth.password_validation import validate_password
from django.core.management import CommandError, call_command
from django.utils import translation

from tests.conftest import configure, manage
from tests.xworkmate.test_run_and_fresh_home import TEST_CONFIG
from xworkmate.models import ApiKey

SUFFIX = " Nothing was created; set a stronger password, or unset the variable to have one generated."


@pytest.mark.parametrize(
    ("password", "rules"),
    [
        ("short1", "This password is too short. It must contain at least 8 characters. "
                   "This password is too common."),
        ("password123", "This password is too common."),
        ("40917263581", "This password is entirely numeric."),
        ("admin2026", "The password is too similar to the username."),
    ],
)
def test_it_refuses_a_weak_admin_password_and_creates_nothing(
    db, settings, monkeypatch, tmp_path, password, rules
):
    root = tmp_path / "workspace"
    configure(settings, "workspace", roots=(str(root),))
    monkeypatch.setenv("XWORKMATE_ADMIN_PASSWORD", password)
    with pytest.raises(CommandError) as refused:
        call_command("xworkmate", "bootstrap")
    assert str(refused.value) == f"XWORKMATE_ADMIN_PASSWORD: {rules}{SUFFIX}"
    assert not User.objects.exists()
    assert not ApiKey.objects.exists()
    assert not root.exists()


def test_it_refuses_a_weak_admin_password_even_when_the_admin_exists(db, monkeypatch):
    admin = User.objects.create_superuser("admin", "", "Kept-Pw-2026")
    monkeypatch.setenv("XWORKMATE_ADMIN_PASSWORD", "password123")
    with pytest.raises(CommandError, match=r"^XWORKMATE_ADMIN_PASSWORD: This password is too common\."):
        call_command("xworkmate", "bootstrap")
    admin.refresh_from_db()
    assert admin.check_password("Kept-Pw-2026")
    assert not ApiKey.objects.exists()


def test_a_strong_admin_password_becomes_the_admins_and_is_not_echoed(db, monkeypatch, capsys):
    monkeypatch.setenv("XWORKMATE_ADMIN_PASSWORD", "Correct-Horse-2026")
    call_command("xworkmate", "bootstrap")
    out = capsys.readouterr().out
    assert "created admin user 'admin'" in out and "Correct-Horse-2026" not in out
    assert User.objects.get(username="admin").check_password("Correct-Horse-2026")


def test_the_refusal_is_in_english_whatever_the_admins_language(db, monkeypatch):
    # The command line speaks English; service.language_code is the admin's.
    monkeypatch.setenv("XWORKMATE_ADMIN_PASSWORD", "password123")
    with translation.override("zh-hans"), pytest.raises(CommandError) as refused:
        call_command("xworkmate", "bootstrap")
    assert str(refused.value) == f"XWORKMATE_ADMIN_PASSWORD: This password is too common.{SUFFIX}"


def test_without_the_variable_a_generated_password_passes_the_validators(db, capsys):
    call_command("xworkmate", "bootstrap")
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("admin password"))
    generated = line.rsplit(" ", 1)[1]
    validate_password(generated, user=User.objects.get(username="admin"))
    assert User.objects.get(username="admin").check_password(generated)


def test_the_run_refuses_a_weak_admin_password_before_it_touches_the_database(tmp_path):
    home = tmp_path / "home"
    result = manage(
        "xworkmate", "run",
        env={"DATABASE_URL": "", "XWORKMATE_CONFIG": TEST_CONFIG, "XWORKMATE_HOME": str(home),
             "DJANGO_SETTINGS_MODULE": "xworkmate.settings",
             "XWORKMATE_ADMIN_PASSWORD": "12345678"},
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        "CommandError: XWORKMATE_ADMIN_PASSWORD: This password is too common. "
        f"This password is entirely numeric.{SUFFIX}"
    )
    assert not (home / "xworkmate.sqlite3").exists()
