"""D-K16: each app owns its settings section; the kernel's config names none of the apps' keys."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest

from tests.conftest import ROOT
from xworkmate.config import Section
from xworkmate.config.kernel import REQUEST_BODY_LIMIT, UNKNOWN_COOLDOWN
from xworkmate.wiring import SECTIONS, parse_config_text

APPS = ("gateway", "artifacts", "plans", "longrun")
KERNEL_CONFIG = ROOT / "xworkmate" / "config"


def test_every_app_section_is_declared_in_the_apps_own_conf_module():
    by_name = {section.name: section for section in SECTIONS}
    for app in APPS:
        section = by_name[app]
        assert section.type.__module__ == f"{app}.conf"


def test_the_kernel_config_names_no_key_of_an_app_section():
    app_keys = {key for s in SECTIONS if s.name in APPS for key in s.keys}
    names = set()
    for path in KERNEL_CONFIG.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                names.add(node.value)
    # A name the kernel also uses for its own sections or keys is fine (delivery
    # has max_body_bytes too, plans a key named like the workspace section); a
    # name only an app declares must not appear.
    kernel = [s for s in SECTIONS if s.name not in APPS]
    kernel_keys = {s.name for s in kernel} | {key for s in kernel for key in s.keys}
    assert (app_keys - kernel_keys) & names == set()


def test_no_code_looks_a_setting_up_by_two_strings():
    lookup = re.compile(r"XWORKMATE\.get\(|\bconfig\.get\(\s*\"")
    offenders = [
        f"{path.relative_to(ROOT)}:{n}"
        for package in ("xworkmate", *APPS)
        for path in (ROOT / package).rglob("*.py")
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if lookup.search(line)
    ]
    assert offenders == []


def test_a_section_refuses_a_dataclass_that_does_not_match_its_keys():
    @dataclasses.dataclass(frozen=True)
    class Two:
        a: int
        b: int

    with pytest.raises(TypeError, match="differ from its keys"):
        Section("x", Two, {"a": REQUEST_BODY_LIMIT})


def test_the_kernel_reads_its_shared_keys_where_the_apps_place_them(tmp_path: Path):
    config = parse_config_text(
        "[gateway]\nmax_body_bytes = 4096\n[longrun]\nunknown_cooldown = \"5m\"\n", home=tmp_path
    )
    assert config.read(REQUEST_BODY_LIMIT) == 4096
    assert config.read(UNKNOWN_COOLDOWN).total_seconds() == 300
