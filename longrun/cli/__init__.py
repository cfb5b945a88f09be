"""The original skill's scripts as one command line (D-B18), see longrun.cli.running."""

from __future__ import annotations

from longrun.cli.running import SCRIPTS, keep_stderr_for_errors, run

__all__ = ["SCRIPTS", "keep_stderr_for_errors", "run"]
