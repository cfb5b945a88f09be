"""The shell helpers (§7.12): Celery beat runs these jobs; kept for agents that call them."""

from __future__ import annotations

import os
import shlex
import sys
import tempfile
import time
from argparse import ArgumentTypeError, Namespace
from collections.abc import Callable
from pathlib import Path

from django.db import close_old_connections
from django.utils import timezone

from longrun import selectors
from longrun.cli._args import second_count
from longrun.policies.answers import EXIT_INVALID, EXIT_OK, Answer, LongrunError

__all__ = ["HANDLERS"]


def _log_file() -> str:
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
        f"run_watchdog_once >> {shlex.quote(_log_file())} 2>&1"
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


def _watchdog_loop(args: Namespace) -> Answer:
    """Every INTERVAL_SECONDS: the recovery report and a keepalive run, appended to LOG_FILE.

    Runs until it is stopped, as the original loop did.
    """
    # Here, not above: longrun.cli.running finds this module's handlers when it loads.
    from longrun.cli.running import run

    try:
        interval = second_count(os.environ.get("INTERVAL_SECONDS") or "60")
    except ArgumentTypeError as exc:
        raise LongrunError(
            exit_code=EXIT_INVALID,
            body=f"invalid INTERVAL_SECONDS: {exc}",
            field="INTERVAL_SECONDS",
            rule="seconds between ticks, 1 or more",
        ) from None
    zone = selectors.longrun_rules().zone
    while True:
        close_old_connections()  # a connection may have died while the loop slept
        with open(_log_file(), "a", encoding="utf-8") as log:
            stamp = timezone.now().astimezone(zone).strftime("%Y-%m-%d %H:%M:%S %z")
            log.write(f"\n[{stamp}] watchdog tick\n")
            for argv in (
                ["recover_due_tasks", "--json"],
                ["run_keepalive_once", "--idle-seconds", str(interval)],
            ):
                run(argv, prog="watchdog_loop", stdout=log, stderr=log)
        time.sleep(interval)


# By the operation's name in the table (longrun/skill/scripts/_operations.py).
HANDLERS: dict[str, Callable[[Namespace], Answer]] = {
    "install-watchdog-cron": _install_watchdog_cron,
    "watchdog-loop": _watchdog_loop,
}
