"""D-K31: which host a workspace path is on, how refusals travel back, and the config.

The real trip through files@<host> (two workers standing in for two hosts, one
stopped) is tests/integration/test_workspace_hosts.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from artifacts.engine import ArtifactMissingError
from plans.planfile import PlanFileBlocked, PlanFileError
from tests.conftest import configure
from tests.xworkmate.test_config import parse, problems
from xworkmate import hostfiles
from xworkmate.config import ConfigError
from xworkmate.lib.errors import ConflictError, HostUnavailableError, InputError
from xworkmate.supervisor import commands


def _hosts_config(extra: str = "", broker: str = 'url = "redis://127.0.0.1:6379/0"') -> str:
    return f"""
[broker]
{broker}

[workspace]
roots = ["/srv/a/ws", "/srv/b/ws", "/srv/b/ws/deeper"]
{extra}

[workspace.hosts]
"/srv/b/ws" = "openclaw-b"
"/srv/b/ws/deeper" = "openclaw-c"
"""


@pytest.fixture(autouse=True)
def _own_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """The operations a test registers go when it ends."""
    monkeypatch.setattr(hostfiles, "_OPERATIONS", dict(hostfiles._OPERATIONS))


# --- the config --------------------------------------------------------------------------


def test_it_reads_the_hosts_of_roots_and_this_hosts_name_from_the_environment():
    config = parse(_hosts_config(), env={"XWORKMATE_HOST": "openclaw-b"})
    workspace = config.sections["workspace"]
    assert workspace.hosts == {"/srv/b/ws": "openclaw-b", "/srv/b/ws/deeper": "openclaw-c"}
    assert workspace.this_host == "openclaw-b"
    assert config.source_of("workspace.this_host") == "environment"


def test_it_refuses_a_host_for_a_root_that_is_not_configured_and_bad_host_names():
    found = problems(_hosts_config().replace('"/srv/b/ws" = ', '"/srv/x/ws" = '))
    assert found == [
        "workspace.hosts: '/srv/x/ws' is not one of workspace.roots "
        "(/srv/a/ws, /srv/b/ws, /srv/b/ws/deeper)"
    ]
    found = problems(_hosts_config().replace('"openclaw-b"', '"B Host"'))
    assert found == [
        "workspace.hosts: '/srv/b/ws': must be a host name: lowercase letters, digits, '.' "
        "and '-', at most 63 (got 'B Host')"
    ]
    found = problems("[workspace]\nthis_host = \"x_y\"\n")
    assert found[0].startswith("workspace.this_host: must be a host name")


def test_it_refuses_hosts_on_the_embedded_file_broker():
    found = problems(_hosts_config(broker='url = ""'))
    assert found == [
        "workspace.hosts: a workspace on another host needs a broker every host reaches "
        "(set broker.url to Redis or RabbitMQ); the embedded file broker serves one machine"
    ]


def test_it_leaves_a_config_without_hosts_as_it_was():
    config = parse("")
    assert config.sections["workspace"].hosts == {}
    assert config.sections["workspace"].this_host == ""


# --- which host holds a path ---------------------------------------------------------------


@pytest.fixture
def hosts(settings: Any) -> None:
    configure(
        settings,
        "workspace",
        roots=("/srv/a/ws", "/srv/b/ws", "/srv/b/ws/deeper"),
        hosts={"/srv/b/ws": "openclaw-b", "/srv/b/ws/deeper": "openclaw-c"},
        this_host="",
    )


def test_it_finds_the_host_of_a_path_by_its_longest_root_without_touching_the_disk(hosts):
    assert hostfiles.host_of("/srv/b/ws") == "openclaw-b"
    assert hostfiles.host_of("/srv/b/ws/team/x") == "openclaw-b"
    assert hostfiles.host_of("/srv/b/ws/deeper/x") == "openclaw-c"
    assert hostfiles.host_of("/srv/b/ws/../ws/deeper") == "openclaw-c"
    assert hostfiles.host_of("/srv/a/ws/x") == ""  # a root with no host: every process's
    # By parts, not by text: /srv/b/wsx is no path of /srv/b/ws.
    assert hostfiles.host_of("/srv/b/wsx") == ""
    # None (the default workspace) and a path in no root are judged as the first
    # root; the operation there refuses a path outside the roots.
    assert hostfiles.host_of(None) == ""
    assert hostfiles.host_of("/elsewhere") == ""


def test_with_no_hosts_every_path_is_this_processs(settings):
    configure(settings, "workspace", roots=("/srv/a/ws",), hosts={})
    assert hostfiles.host_of("/srv/a/ws/x") == ""
    assert hostfiles.host_of(None) == ""


def test_an_operation_runs_here_when_its_host_is_this_one_or_none(hosts, settings):
    calls = []
    hostfiles.register_file_operation("test.echo", lambda **kw: calls.append(kw) or kw)
    assert hostfiles.run_on_host("", "test.echo", x=1) == {"x": 1}
    configure(settings, "workspace", this_host="openclaw-b")
    assert hostfiles.run_on_host("openclaw-b", "test.echo", x=2) == {"x": 2}
    assert calls == [{"x": 1}, {"x": 2}]


def test_a_second_operation_of_one_name_is_refused():
    hostfiles.register_file_operation("test.twice", print)
    hostfiles.register_file_operation("test.twice", print)  # the same one again: harmless
    with pytest.raises(ValueError, match="already registered"):
        hostfiles.register_file_operation("test.twice", repr)


# --- what travels back -------------------------------------------------------------------


def _travel(exc: Exception) -> Exception:
    def fails() -> None:
        raise exc

    hostfiles.register_file_operation(f"test.fail.{type(exc).__name__}", fails)
    packed = hostfiles.execute(f"test.fail.{type(exc).__name__}", {})
    assert set(packed) == {"refusal"}
    with pytest.raises(Exception) as raised:
        hostfiles._unpack(packed)
    return raised.value


@pytest.mark.parametrize(
    "exc",
    [
        InputError("openclawSessionKey required"),
        InputError("x", code="NOT_FOUND"),
        ConflictError("conflict: xworkmate session mapping already points to a different session"),
        ArtifactMissingError("ENOENT: no such file or directory, realpath '/x'"),
        PlanFileError("Status: must be one of Active, Cancelled"),
        PlanFileBlocked("read-back mismatch"),
    ],
    ids=lambda exc: type(exc).__name__,
)
def test_a_refusal_comes_back_as_the_same_type_code_message_and_attributes(exc):
    back = _travel(exc)
    assert type(back) is type(exc)
    assert str(back) == str(exc)
    assert back.args == exc.args
    if isinstance(exc, InputError):
        assert (back.code, back.message, back.http_status) == (exc.code, exc.message, exc.http_status)
    if isinstance(exc, PlanFileBlocked):
        assert back.reason == exc.reason


def test_a_result_comes_back_as_it_is_and_other_exceptions_are_the_hosts_failure():
    hostfiles.register_file_operation("test.answer", lambda: {"a": [1, "b"]})
    assert hostfiles._unpack(hostfiles.execute("test.answer", {})) == {"a": [1, "b"]}

    def broken() -> None:
        raise OSError("disk on fire")

    hostfiles.register_file_operation("test.broken", broken)
    with pytest.raises(OSError, match="disk on fire"):  # the task fails, with its traceback
        hostfiles.execute("test.broken", {})
    with pytest.raises(LookupError, match="unknown file operation 'test.nothing'"):
        hostfiles.execute("test.nothing", {})


def test_a_refusal_of_a_type_outside_the_service_or_not_a_refusal_is_not_raised_as_one():
    for kind in ("os:system", "builtins:KeyError", "xworkmate.lib.errors:__class__",
                 "xworkmate.config:ConfigError"):
        back = hostfiles._rebuild({"type": kind, "args": ["x"], "attributes": {}})
        assert type(back) is RuntimeError and kind in str(back)
    assert not issubclass(ConfigError, InputError)


def test_an_away_host_is_a_503_that_says_to_retry(settings):
    exc = HostUnavailableError("workspace host 'b' did not answer within 10s")
    assert (exc.code, exc.http_status) == ("UNAVAILABLE", 503)
    from xworkmate.api_errors import refusal_response

    response = refusal_response(exc, envelope=True)
    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert response.data == {"ok": False, "error": {"code": "UNAVAILABLE", "message": str(exc)}}
    # The two ways of being away, each said as what is known.
    assert "it will not run" in hostfiles._away("b", "files@b", 10, "PENDING")
    assert "may still complete" in hostfiles._away("b", "files@b", 10, "STARTED")


# --- the host's own worker -----------------------------------------------------------------


def test_a_workspace_host_gets_a_worker_of_its_file_operations_only(tmp_path: Path):
    cmds = commands(bind="127.0.0.1:8000", embedded_broker=False, beat_schedule_file="b",
                    home=tmp_path, workers=1, files_host="openclaw-b")
    files = cmds["files"]
    assert files[files.index("--queues") + 1] == "files@openclaw-b"
    assert files[files.index("--hostname") + 1] == "files-openclaw-b@%h"
    assert "files" not in commands(bind="127.0.0.1:8000", embedded_broker=False,
                                   beat_schedule_file="b", home=tmp_path, workers=1)
