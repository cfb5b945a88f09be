"""The original skill's scripts as one command line (D-B18).

`manage.py longrun <script> …` and the console script `xworkmate-longrun
<script> …` take the original scripts' names (`task_state.py` or
`task_state`), subcommands and flags, print what the scripts printed (JSON
with `ensure_ascii=False, indent=2`, or their lines of text) on stdout and
their errors on stderr, and end with their exit codes, so an agent that
follows SKILL.md needs no change. Each script is one call of a selector or a
service; this package only parses and prints. Bad arguments exit 2, as
argparse made the originals exit.

The scripts, their subcommands and flags are the skill's operation table
(longrun/skill/scripts/_operations.py, which the skill's wrapper scripts read
too); the text of watchdog, recover and emit is its one rendering (_render.py).
Here: `running` (parse, call, print), `task_state`, `monitors` (validation,
the foreground heartbeat, keepalive, the watchdog, cleanup), `shell` (the two
shell helpers) and `beside` (detect-trigger, import-state, export-state), each
with its HANDLERS by operation.

Where the scripts took a threshold (`--stale-minutes`, `--idle-seconds`,
`--unknown-cooldown-minutes`), leaving it out means the configured one
(`[longrun]`), whose defaults are the scripts' defaults; the few other
departures are D-B23's.

Beside the scripts: `detect-trigger` says whether a user message enters
long-run mode (D-B1); `import-state` and `export-state` move the original's
`.task-state.json` in and out (D-B22).
"""

from __future__ import annotations

from longrun.cli.running import SCRIPTS, keep_stderr_for_errors, run

__all__ = ["SCRIPTS", "asks_for_help", "keep_stderr_for_errors", "run"]


def asks_for_help(argv: list[str]) -> bool:
    """Whether the command line only asks for help (no script, or -h/--help): that needs
    no database, so a fresh data home may read it."""
    return not argv or any(arg in ("-h", "--help") for arg in argv)
