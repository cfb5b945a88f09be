"""The apps this service is made of, as the kernel's configuration sees them (D-K16).

One of the wiring files beside settings.py and urls.py: the only kernel modules
that name the apps. Each app owns its settings section in its ``conf.py``; this
list puts the sections in the order the example file and ``config --show``
list them, the kernel's own among them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import artifacts.conf
import gateway.conf
import longrun.conf
import plans.conf
from xworkmate import config
from xworkmate.config.kernel import ADMIN, BROKER, DATABASE, DELIVERY, SERVICE
from xworkmate.config.keys import Key
from xworkmate.config.load import Config
from xworkmate.config.section import Section
from xworkmate.config.workspace import WORKSPACE

SECTIONS: tuple[Section[Any], ...] = (
    SERVICE,
    ADMIN,
    DATABASE,
    BROKER,
    gateway.conf.SECTION,
    WORKSPACE,
    artifacts.conf.SECTION,
    plans.conf.SECTION,
    DELIVERY,
    longrun.conf.SECTION,
)

# Every key of the file by section, for the example file's and the docs' checks.
SCHEMA: dict[str, dict[str, Key]] = {section.name: dict(section.keys) for section in SECTIONS}



def load_config(
    path: Path | None = None, *, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> Config:
    """The configuration with every section of this service (xworkmate.config.load_config)."""
    return config.load_config(path, env=env, cwd=cwd, sections=SECTIONS)


def parse_config_text(text: str, *, env: Mapping[str, str] | None = None, home: Path) -> Config:
    """TOML text checked against every section of this service (tests, ``config --check -``)."""
    return config.parse_config_text(text, env=env, home=home, sections=SECTIONS)
