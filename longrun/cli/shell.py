"""The shell helpers (§7.12): Celery beat runs these jobs; kept for agents that call them."""

from __future__ import annotations

import os
import shlex
import sys
import tempfile
from argparse import Namespace
from collections.abc import Callable
from pathlib import Path

from longrun.policies.answers import EXIT_OK, Answer

__all__ = ["HANDLERS", "log_file"]


def log_file() -> str:
    return os.environ.get("LOG_FILE") or os.path.join(
        tempfile.gettempdir(), "long-run-mode-watchdog.log"
    )


def _install_watchdog_cron(args: Namespace) -> Answer:
    """Print the crontab entry (it installs nothing, as the original installed nothing)."""
    command = Path(sys.executable).with_name("xworkmate-longrun")
    env = " ".join(
        f"{name}={shlex.quote(os.environ[name])}"
        for name in ("XWORKMATE_CONFIG", "XWORKMATE_HOME")
        if os.environ.get(name)
    )
    line = (
        f"*/{args.interval} * * * * {env + ' ' if env else ''}{shlex.quote(str(command))} "
        f"run_watchdog_once >> {shlex.quote(log_file())} 2>&1"
    )
    return Answer(
        EXIT_OK,
        "\n".join(
            (
                f"# 建议添加到 crontab 的条目（每 {args.interval} 分钟跑一次兜底回收）",
                "# 可选环境变量：LOG_FILE、XWORKMATE_CONFIG、XWORKMATE_HOME",
                "# Celery beat 已按周期任务 longrun-watchdog 运行同一回收；"
                "只有不运行 beat 时才需要这一条",
                line,
            )
        ),
    )


# By the operation's name in the table (longrun/skill/scripts/_operations.py).
HANDLERS: dict[str, Callable[[Namespace], Answer]] = {
    "install-watchdog-cron": _install_watchdog_cron,
}
