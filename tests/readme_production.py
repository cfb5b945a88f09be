"""The README's "## Production" block, made runnable on a test machine.

The block is read from README.md itself, so what the test runs is what the
README says: only the documented venv, URLs, secrets, paths and port are
replaced (each must still be in the block, or the test fails), and the
long-running command (`xworkmate serve`) is started in the background with the
same arguments, its output in a log, its pid in a file.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import ROOT

README = ROOT / "README.md"
FENCE = re.compile(r"^```sh\n(?P<body>.*?)^```\n", re.S | re.M)
LONG_RUNNING = ("xworkmate serve ",)
TRAILING_COMMENT = re.compile(r"\s+#[^'\"]*$")

# What the README writes for each value a real deployment has its own of.
VENV = "/opt/xworkmate/.venv"
DATABASE_URL = "postgresql://xworkmate:secret@db:5432/xworkmate"
BROKER_URL = "redis://cache:6379/0"
SIGNING_SECRET = "XWORKMATE_ARTIFACT_REF_SIGNING_SECRET=..."
SECRET_KEY = "SECRET_KEY=..."
DATA_HOME = "/var/lib/xworkmate"
CONFIG_DIR = "/etc/xworkmate"
BIND = "0.0.0.0:8000"


def production_block(text: str | None = None) -> str:
    """The first sh block of the README's "## Production" section."""
    text = README.read_text(encoding="utf-8") if text is None else text
    section = text.split("\n## Production\n", 1)[1].split("\n## ", 1)[0]
    fence = FENCE.search(section)
    if fence is None:
        raise ValueError("the README's Production section has no sh block")
    return fence["body"]


def _commands(body: str) -> list[list[str]]:
    """The block's lines grouped into commands (a line ending in a backslash continues)."""
    commands: list[list[str]] = []
    current: list[str] = []
    for line in body.splitlines():
        current.append(line)
        if not line.rstrip().endswith("\\"):
            commands.append(current)
            current = []
    if current:
        commands.append(current)
    return commands


def production_script(
    body: str, *, venv: Path, database_url: str, broker_url: str, home: Path, config_dir: Path,
    port: int, logs: Path, pids: Path,
) -> str:
    """The block as a bash script for this machine; it returns once everything is started."""
    substitutions = {
        VENV: str(venv),
        DATABASE_URL: database_url,
        BROKER_URL: broker_url,
        SIGNING_SECRET: "XWORKMATE_ARTIFACT_REF_SIGNING_SECRET=readme-production-signing-secret",
        SECRET_KEY: "SECRET_KEY=readme-production-secret-key-of-fifty-characters-at-least",
        DATA_HOME: str(home),
        CONFIG_DIR: str(config_dir),
        BIND: f"127.0.0.1:{port}",
    }
    for documented in substitutions:
        if documented not in body:
            raise ValueError(f"the Production block no longer says {documented!r}")
    for documented, value in substitutions.items():
        body = body.replace(documented, value)
    lines = ["set -euo pipefail"]
    started = 0
    for command in _commands(body):
        if command[0].lstrip().startswith(LONG_RUNNING):
            started += 1
            last = TRAILING_COMMENT.sub("", command[-1])
            log = logs / f"service-{started}.log"
            command = [*command[:-1], f'{last} >"{log}" 2>&1 &', f'echo $! >>"{pids}"']
        lines.extend(command)
    if started != 1:
        raise ValueError(f"the Production block starts {started} services, not one "
                         "`xworkmate serve`")
    return "\n".join(lines) + "\n"
