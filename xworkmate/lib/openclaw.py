"""Where OpenClaw keeps things on an agent host, by default: one place for each path.

The config's defaults, the artifact engine's defaults and the documentation
all name these; keeping them here means a changed default is changed once.
"""

from __future__ import annotations

import os
import tempfile

__all__ = ["DEFAULT_MEDIA_DIR", "DEFAULT_WORKSPACE", "default_tmp_dir"]

DEFAULT_WORKSPACE = "~/.openclaw/workspace"
DEFAULT_MEDIA_DIR = "~/.openclaw/media"


def default_tmp_dir() -> str:
    """OpenClaw's staging folder: Node's ``os.tmpdir() + "/openclaw"`` (TMPDIR honoured alike)."""
    return os.path.join(tempfile.gettempdir(), "openclaw")
