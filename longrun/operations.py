"""The skill's operation table and its text rendering, as the server reads them.

Both live in the skill's folder (longrun/skill/scripts/_operations.py and
_render.py), standard library only, because the wrapper scripts import them
from their own folder, where no package of the server is. The server loads
those same files, under the names the wrappers import them by, so the command
line (longrun.cli), the URLs (longrun.urls) and the views' scopes
(longrun.api) read the one table, and both command lines print one text.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

__all__ = ["SKILL_SCRIPTS", "render", "table"]

SKILL_SCRIPTS = Path(__file__).resolve().parent / "skill" / "scripts"


def _load(name: str) -> ModuleType:
    loaded = sys.modules.get(name)
    if loaded is not None:
        return loaded
    spec = importlib.util.spec_from_file_location(name, SKILL_SCRIPTS / f"{name}.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {name} from {SKILL_SCRIPTS}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


if TYPE_CHECKING:
    # mypy finds them on its path (pyproject's mypy_path), under the same names.
    import _operations as table
    import _render as render
else:
    table = _load("_operations")
    render = _load("_render")
