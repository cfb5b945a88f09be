"""`manage.py xworkmate ...`: config, API keys, bootstrap, admin unlock and the one-command run."""

from __future__ import annotations

import ipaddress
import json
import os
import sys
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from axes.utils import reset as axes_reset
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection
from django.utils import timezone

from xworkmate import __version__
from xworkmate.bootstrap import (
    AdminPasswordRefused,
    bootstrap,
    check_admin_password,
    require_services,
)
from xworkmate.config import ConfigError, effective_config, load_config
from xworkmate.config.kernel import SERVICE
from xworkmate.dbcheck import (
    ServiceUnavailable,
    require_migrated_database,
    wait_for_migrated_database,
)
from xworkmate.hostfiles import this_host
from xworkmate.metrics import clear_multiprocess_dir
from xworkmate.models import ApiKey
from xworkmate.periodic import configured_jobs, periodic_job_problems
from xworkmate.policies import SCOPES, bind_problem, production_problem
from xworkmate.services import ApiKeyError, KeyBinding, api_key_create, api_key_revoke
from xworkmate.supervisor import (
    AlreadyRunning,
    Supervisor,
    commands,
    port_problem,
    run_lock,
    web_workers,
)

PORT_ENV = "XWORKMATE_PORT"
BIND_ENV = "XWORKMATE_BIND"
EXAMPLE_CONFIG = Path(__file__).resolve().parents[2] / "config" / "example.toml"


class Command(BaseCommand):
    help = "xworkmate service commands: config, apikey, bootstrap, unlock, run, serve"

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True, parser_class=ArgumentParser)

        config = sub.add_parser("config", help="print the effective config (secrets masked)")
        config.add_argument(
            "--check",
            metavar="FILE",
            nargs="?",
            const="",
            help="only validate FILE (default: the active config); exit 1 on error",
        )
        config.add_argument("--show-secrets", action="store_true", help="do not mask secrets")
        config.add_argument(
            "--example",
            action="store_true",
            help="print the example config (every key, its default and its rules)",
        )

        key = sub.add_parser("apikey", help="create, list or revoke API keys")
        key_sub = key.add_subparsers(dest="key_action", required=True, parser_class=ArgumentParser)
        create = key_sub.add_parser("create", help="create a key; prints it once, on the last line")
        create.add_argument("--name", required=True)
        create.add_argument(
            "--scope", action="append", default=[], choices=SCOPES, help="repeat for several scopes"
        )
        create.add_argument(
            "--session",
            default="",
            metavar="KEY",
            help="bind the key to this OpenClaw session (an agent key; needs --run)",
        )
        create.add_argument(
            "--run", default="", metavar="RUN", help="bind the key to this run (needs --session)"
        )
        create.add_argument(
            "--workspace", default="", metavar="DIR", help="bound workspace dir (optional)"
        )
        create.add_argument(
            "--artifact-scope",
            default="",
            metavar="SCOPE",
            help="bound task directory, tasks/<session>/<run> (optional)",
        )
        key_sub.add_parser("list", help="list keys (never the keys themselves)")
        revoke = key_sub.add_parser("revoke", help="revoke a key by name")
        revoke.add_argument("name")

        sub.add_parser("bootstrap", help="create the admin user and the local API key if missing")

        unlock = sub.add_parser(
            "unlock", help="lift admin sign-in locks: of a username, an address, both, or all"
        )
        unlock.add_argument("--username", default="", help="the locked username")
        unlock.add_argument("--address", default="", help="the client address it was locked for")
        unlock.add_argument("--all", action="store_true", help="lift every lock")

        run = sub.add_parser("run", help="migrate, bootstrap, then run web + worker + beat")
        run.add_argument(
            "--port", type=int, default=None, help=f"web port (default ${PORT_ENV} or 8000)"
        )

        serve = sub.add_parser(
            "serve",
            help="the production profile: gunicorn, Celery workers and one beat on "
            "DATABASE_URL and CELERY_BROKER_URL",
        )
        serve.add_argument(
            "--bind", default=None, metavar="HOST:PORT",
            help=f"web address (default ${BIND_ENV} or 127.0.0.1:8000)",
        )
        serve.add_argument(
            "--web-workers", type=int, default=None, metavar="N",
            help="gunicorn workers (default service.web_workers, else 2 x CPUs + 1)",
        )
        serve.add_argument(
            "--workers", type=int, default=1, metavar="M", help="Celery worker processes (1)"
        )
        serve.add_argument(
            "--concurrency", type=int, default=None, metavar="C",
            help="tasks at a time in each Celery worker (default: the CPU count)",
        )
        serve.add_argument(
            "--only", choices=("web", "worker", "beat", "files"), default=None,
            help="run this one process in the foreground, for an init system that "
            "supervises each (deploy/); `files`: on a workspace host, the worker of its "
            "file operations (XWORKMATE_HOST names the host)",
        )
        serve.add_argument(
            "--migrate", action="store_true", help="apply the migrations first"
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        action = opts["action"]
        if action == "config" and opts["example"]:
            # Package data: an installed wheel has no checkout to copy it from (issue 20).
            self.stdout.write(EXAMPLE_CONFIG.read_text(encoding="utf-8"), ending="")
        elif action == "config":
            self._config(opts["check"], opts["show_secrets"])
        elif action == "apikey":
            self._require_migrated()
            self._apikey(opts)
        elif action == "bootstrap":
            self._require_migrated()
            self._print_bootstrap()
        elif action == "unlock":
            self._unlock(opts["username"], opts["address"], every=opts["all"])
        elif action == "run":
            sys.exit(self._run(opts["port"]))
        elif action == "serve":
            sys.exit(self._serve(opts))

    # -- config --------------------------------------------------------------
    def _config(self, check: str | None, show_secrets: bool) -> None:
        if check is not None:
            try:
                loaded = load_config(
                    Path(check) if check else None, sections=settings.XWORKMATE.declared
                )
                problems = periodic_job_problems(loaded)
            except ConfigError as exc:
                problems = exc.problems
            for problem in problems:
                self.stderr.write(problem)
            if problems:
                raise CommandError("config is invalid", returncode=1)
            self.stdout.write(f"{loaded.source}: OK")
            return
        config = settings.XWORKMATE
        data = effective_config(config, configured_jobs(config), mask_secrets=not show_secrets)
        self.stdout.write(json.dumps(data, indent=2, ensure_ascii=False))

    # -- apikey ---------------------------------------------------------------
    def _apikey(self, opts: dict[str, Any]) -> None:
        what = opts["key_action"]
        if what == "create":
            try:
                key, token = api_key_create(
                    name=opts["name"],
                    scopes=opts["scope"],
                    binding=KeyBinding(
                        session_key=opts["session"],
                        run_id=opts["run"],
                        workspace_dir=opts["workspace"],
                        artifact_scope=opts["artifact_scope"],
                    ),
                )
            except ApiKeyError as exc:
                raise CommandError(str(exc)) from exc
            self.stdout.write(f"created API key {key.name!r} with scopes {', '.join(key.scopes)}")
            if key.is_bound:
                self.stdout.write(
                    f"bound to session {key.bound_session_key!r} run {key.bound_run_id!r}"
                )
            self.stdout.write("store it now; it cannot be shown again:")
            self.stdout.write(token)
        elif what == "list":
            for key in ApiKey.objects.order_by("name"):
                state = "active" if key.is_active else f"revoked {key.revoked_at:%Y-%m-%d %H:%M}"
                used = f"{key.last_used_at:%Y-%m-%d %H:%M}" if key.last_used_at else "never"
                bound = (
                    f"\tbound {key.bound_session_key} / {key.bound_run_id}" if key.is_bound else ""
                )
                self.stdout.write(
                    f"{key.name}\t{key.prefix}…\t{','.join(key.scopes)}\t{state}\tlast used {used}"
                    f"{bound}"
                )
        elif what == "revoke":
            found = ApiKey.objects.filter(name=opts["name"]).first()
            if found is None:
                raise CommandError(f"name: no API key named {opts['name']!r}")
            if not api_key_revoke(key=found, now=timezone.now()):
                self.stdout.write(f"API key {found.name!r} was already revoked")
            else:
                self.stdout.write(f"revoked API key {found.name!r}")

    # -- unlock -----------------------------------------------------------------
    def _unlock(self, username: str, address: str, *, every: bool) -> None:
        """Forget the failed admin sign-ins django-axes counts (D-K14), which lifts their lock."""
        if every and (username or address):
            raise CommandError("--all: lifts every lock, so it takes no --username or --address")
        if not (every or username or address):
            raise CommandError("unlock: give --username NAME, --address IP (or both), or --all")
        if address:
            try:
                # As the lock recorded it (xworkmate.admin_login): 2001:DB8::1 is 2001:db8::1.
                address = str(ipaddress.ip_address(address.strip()))
            except ValueError:
                raise CommandError(
                    f"--address: must be an IPv4 or IPv6 address (got {address!r})"
                ) from None
        self._require_migrated()
        removed = int(axes_reset(ip=address or None, username=username or None))
        named = [f"username {username!r}"] if username else []
        named += [f"address {address}"] if address else []
        which = ", ".join(named) or "all"
        if removed:
            self.stdout.write(f"unlocked ({which}): removed {removed} failed sign-in record(s)")
        else:
            self.stdout.write(f"nothing to unlock ({which}): no failed sign-ins recorded")

    # -- bootstrap / run --------------------------------------------------------
    def _require_migrated(self) -> None:
        try:
            require_migrated_database()
        except ServiceUnavailable as exc:
            raise CommandError(str(exc)) from exc

    def _print_bootstrap(self) -> None:
        try:
            result = bootstrap()
        except AdminPasswordRefused as exc:
            raise CommandError(str(exc)) from exc
        for root in result.workspace_roots_created:
            self.stdout.write(f"created workspace root {root}")
        for problem in result.workspace_root_problems:
            self.stderr.write(problem)
        if result.admin_created:
            self.stdout.write(f"created admin user {result.admin_username!r}")
            if result.admin_password:
                self.stdout.write(
                    f"admin password (shown once, change it in the admin): {result.admin_password}"
                )
        if result.api_key_token:
            self.stdout.write("created API key 'local' (all write scopes); shown once:")
            self.stdout.write(result.api_key_token)

    def _run(self, port: int | None) -> int:
        try:
            with run_lock(settings.HOME):
                return self._run_holding_the_data_home(port)
        except AlreadyRunning as exc:
            raise CommandError(str(exc)) from exc

    def _run_holding_the_data_home(self, port: int | None) -> int:
        if port is None:
            raw = os.environ.get(PORT_ENV, "8000")
            if not raw.isdigit() or not 0 < int(raw) < 65536:
                raise CommandError(f"{PORT_ENV}: must be a TCP port number 1-65535 (got {raw!r})")
            port = int(raw)
        problem = port_problem("127.0.0.1", port)
        if problem:
            raise CommandError(f"web port ({PORT_ENV} or --port): {problem}")
        try:
            # Before the database is touched: a refused password leaves nothing behind.
            check_admin_password()
        except AdminPasswordRefused as exc:
            raise CommandError(str(exc)) from exc
        try:
            require_services()
        except ServiceUnavailable as exc:
            raise CommandError(str(exc)) from exc
        call_command("check", fail_level="ERROR")
        call_command("migrate", interactive=False, verbosity=0)
        self._print_bootstrap()
        workers = web_workers(SERVICE.of(settings.XWORKMATE).web_workers, os.cpu_count())
        self.stdout.write(
            f"xworkmate: config {settings.XWORKMATE.source}; data home {settings.HOME}; "
            f"{workers} web workers\n"
            f"xworkmate: admin at http://127.0.0.1:{port}/admin/ , health at "
            f"http://127.0.0.1:{port}/healthz"
        )
        self.stdout.flush()
        cmds = commands(
            bind=f"127.0.0.1:{port}",
            embedded_broker=settings.CELERY_BROKER_URL.startswith("filesystem://"),
            beat_schedule_file=settings.CELERY_BEAT_SCHEDULE_FILENAME,
            home=settings.HOME,
            workers=workers,
        )
        # The request counters start at zero with the run (D-K26).
        clear_multiprocess_dir(settings.HOME)
        return Supervisor(cmds, os.environ, home=settings.HOME).run()

    # -- serve: the production profile (issue 20) -------------------------------
    def _say(self, line: str) -> None:
        self.stdout.write(line)
        self.stdout.flush()

    def _serve(self, opts: dict[str, Any]) -> int:
        if opts["only"] == "files" and not this_host():
            raise CommandError(
                "--only files: set XWORKMATE_HOST (workspace.this_host) to the host whose "
                "workspace roots this worker serves, as [workspace.hosts] names it"
            )
        for flag in ("web_workers", "workers", "concurrency"):
            if opts[flag] is not None and opts[flag] < 1:
                raise CommandError(f"--{flag.replace('_', '-')}: must be at least 1")
        bind = opts["bind"] or os.environ.get(BIND_ENV, "127.0.0.1:8000")
        problem = bind_problem(bind)
        if problem:
            raise CommandError(f"--bind / {BIND_ENV}: {problem}")
        problem = production_problem(connection.vendor, settings.CELERY_BROKER_URL)
        if problem:
            raise CommandError(problem)
        web = opts["web_workers"] or web_workers(
            SERVICE.of(settings.XWORKMATE).web_workers, os.cpu_count()
        )
        cmds = commands(
            bind=bind,
            embedded_broker=False,
            beat_schedule_file=settings.CELERY_BEAT_SCHEDULE_FILENAME,
            home=settings.HOME,
            workers=web,
            worker_processes=opts["workers"],
            concurrency=opts["concurrency"] or os.cpu_count() or 1,
            files_host=this_host(),
        )
        if opts["only"]:
            # Under an init system (deploy/): this process becomes the one named, so the
            # init system signals and restarts it directly (D-K24), once the database is
            # up and migrated (a host may boot before its database server, D-K29).
            if opts["migrate"]:
                call_command("migrate", interactive=False, verbosity=1)
            wait_for_migrated_database(self._say)
            argv = cmds[opts["only"]]
            self.stdout.flush()
            os.execv(argv[0], argv)  # noqa: S606 (our own fixed argv)
        try:
            with run_lock(settings.HOME):
                return self._serve_holding_the_data_home(
                    cmds, bind=bind, web=web, migrate=opts["migrate"]
                )
        except AlreadyRunning as exc:
            raise CommandError(str(exc)) from exc

    def _serve_holding_the_data_home(
        self, cmds: dict[str, list[str]], *, bind: str, web: int, migrate: bool
    ) -> int:
        if not bind.startswith("unix:"):
            host, _, port = bind.rpartition(":")
            problem = port_problem(host, int(port))
            if problem:
                raise CommandError(f"--bind / {BIND_ENV}: {problem}")
        try:
            require_services()
        except ServiceUnavailable as exc:
            raise CommandError(str(exc)) from exc
        call_command("check", fail_level="ERROR")
        if migrate:
            call_command("migrate", interactive=False, verbosity=1)
        else:
            self._require_migrated()
        workers = sum(1 for name in cmds if name.startswith("worker"))
        self.stdout.write(
            f"xworkmate {__version__}: config {settings.XWORKMATE.source}; "
            f"data home {settings.HOME}; {web} web workers on {bind}, "
            f"{workers} Celery worker process(es), one beat"
        )
        self.stdout.flush()
        clear_multiprocess_dir(settings.HOME)
        return Supervisor(cmds, os.environ, home=settings.HOME).run()
