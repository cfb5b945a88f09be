#!/usr/bin/env python3
"""The schedule-plan skill's client of the xworkmate plans API.

One command per protocol step; each prints the server's JSON answer and exits

  0  the server did it (for check-reply: the reply keeps the rule),
  1  the server refused it: the error JSON names the rule (for check-reply:
     the reply breaks the rule, the problems are listed),
  2  a usage error (bad or missing options, XWORKMATE_URL or
     XWORKMATE_API_KEY not set),
  3  the server cannot be reached,
  4  the server failed (5xx) or answered something that is not JSON.

Environment: XWORKMATE_URL (the server's root, e.g. http://127.0.0.1:8000)
and XWORKMATE_API_KEY (the run's agent key, or the bridge's key together
with --session-key / --turn-id). Only the Python standard library is used.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
import uuid
from typing import Any, NoReturn

EXIT_OK, EXIT_REFUSED, EXIT_USAGE, EXIT_UNREACHABLE, EXIT_SERVER = 0, 1, 2, 3, 4
DEFAULT_TIMEOUT = 30.0

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


# --- output -------------------------------------------------------------------------------------


def _write(stream: Any, text: str) -> None:
    """UTF-8 whatever the locale's encoding."""
    stream.flush()
    stream.buffer.write(text.encode("utf-8"))
    stream.buffer.flush()


def _emit(value: Any) -> None:
    """Pretty JSON on stdout, Chinese kept readable."""
    _write(sys.stdout, json.dumps(value, ensure_ascii=False, indent=2) + "\n")


# --- argument types -----------------------------------------------------------------------------


def _task_id(text: str) -> str:
    try:
        return str(uuid.UUID(text.strip()))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a Task_ID (a UUID): {text!r}") from None


def _every_ms(text: str) -> int:
    """`90s`, `30m`, `1h`, `1d`, `500ms` or a bare number of milliseconds."""
    match = _DURATION.match(text)
    if not match:
        raise argparse.ArgumentTypeError(
            f"not a duration: {text!r} (e.g. 30m, 1h, 1d, 90s, 500ms, or milliseconds)"
        )
    number, unit = float(match[1]), match[2] or "ms"
    value = int(number * _UNIT_MS[unit])
    if value < 1:
        raise argparse.ArgumentTypeError(f"not a positive duration: {text!r}")
    return value


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("must be a JSON object")
    return value


def _read_text(path: str) -> str:
    """A file's text, or stdin's for `-` (UTF-8; a final newline is dropped)."""
    if path == "-":
        data = sys.stdin.buffer.read()
    else:
        with open(path, "rb") as handle:
            data = handle.read()
    text = data.decode("utf-8")
    return text[:-1] if text.endswith("\n") else text


# --- the parser ---------------------------------------------------------------------------------


def _add_text(parser: argparse.ArgumentParser, name: str, what: str, *, required: bool) -> None:
    """`--NAME TEXT` or `--NAME-file PATH|-` (for text a shell would mangle)."""
    group = parser.add_mutually_exclusive_group(required=required)
    group.add_argument(f"--{name}", metavar="TEXT", help=what)
    group.add_argument(
        f"--{name}-file", metavar="PATH", help=f"{what}, read from a file (`-`: stdin)"
    )


def _add_proposal(parser: argparse.ArgumentParser, *, new: bool) -> None:
    fields = parser.add_argument_group("plan fields" if new else "fields to change")
    fields.add_argument("--task-name", required=new, help="the plan's name (one line)")
    fields.add_argument("--persona", required=new, help="Role_Context: who runs it")
    fields.add_argument("--objective", required=new, help="O: the pain point, and SOUL.md")
    fields.add_argument("--result", required=new, help="R: success criteria, deliverables")
    fields.add_argument(
        "--step",
        action="append",
        required=new,
        metavar="TEXT",
        help="A: one step of the plan (repeat, in order); "
        + ("" if new else "given steps replace all steps; ")
        + "they follow the template's four steps",
    )
    when = parser.add_argument_group("schedule (one of)")
    kinds = when.add_mutually_exclusive_group(required=new)
    kinds.add_argument("--cron", metavar="EXPR", help='a cron expression, e.g. "0 9 * * *"')
    kinds.add_argument("--every", metavar="DURATION", type=_every_ms, help="e.g. 30m, 1h, 1d")
    kinds.add_argument("--at", metavar="ISO", help="one run, e.g. 2026-12-01T09:00:00+08:00")
    kinds.add_argument(
        "--schedule-json",
        metavar="JSON",
        type=_json_object,
        help='a whole schedule object, e.g. {"kind": "every", "everyMs": 3600000, "anchorMs": …}',
    )
    when.add_argument("--tz", metavar="ZONE", help="with --cron: IANA zone, e.g. Asia/Shanghai")
    parser.add_argument(
        "--missed",
        choices=["run-latest", "skip", "run-all"],
        help="fire times missed while the server was down: run the newest once (default), "
        "skip them, or run each within --max-lateness, in order",
    )
    parser.add_argument(
        "--max-lateness",
        type=int,
        metavar="SECONDS",
        help="with --missed run-all: how late (60-604800 s) a missed fire time may still run",
    )
    parser.add_argument(
        "--overlap",
        choices=["skip", "buffer", "allow"],
        help="a fire time while the previous run is still out: skip it (default), buffer one "
        "to run when it ends, or allow a run beside it",
    )
    if not new:
        parser.add_argument(
            "--message",
            metavar="TEXT",
            help="the job message; it must start with the plan's first instruction "
            "(从路径 archives/<ARCHIVE_ID>/PLAN.md 中读取 Task_ID: <TASK_ID> "
            "的详细计划并按步骤执行)",
        )


def _add_turn(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--turn-id",
        metavar="ID",
        help="bridge keys only: the conversation turn (run id) this comes from; "
        "an agent key speaks for its own run",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="plan.py",
        description="schedule-plan: propose, confirm and manage plans on the xworkmate server. "
        "Prints the server's JSON; exit 0 done, 1 refused (the rule is named), 2 usage, "
        "3 server unreachable, 4 server failure.",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"per request (default {DEFAULT_TIMEOUT:g})",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    check = commands.add_parser(
        "check-reply",
        help="check a clarification reply: 预设基准方案, 2-3 options, 其他：[由用户补充]",
    )
    _add_text(check, "reply", "the reply to the user's vague request", required=True)

    propose = commands.add_parser(
        "propose", help="write a new plan into PLAN.md (nothing is scheduled)"
    )
    _add_proposal(propose, new=True)
    propose.add_argument(
        "--session-key",
        metavar="KEY",
        help="bridge keys only: the OpenClaw session (session_status's Session); "
        "an agent key uses its own",
    )
    _add_turn(propose)

    listing = commands.add_parser("list", help="the plans this key may see, newest change first")
    listing.add_argument("--limit", type=int, metavar="N", help="1-200 (default 50)")
    listing.add_argument("--offset", type=int, metavar="N")
    for name, what in (
        ("show", "one plan: state, revision, reviewUrl, job"),
        ("content", "the PLAN.md the plan is in"),
        ("export", "the confirmed plan as OpenClaw's cron.add request (to read, not to send)"),
        ("pause", "pause the plan's job (PLAN.md stays as it is)"),
        ("resume", "resume the plan's job"),
    ):
        sub = commands.add_parser(name, help=what)
        sub.add_argument("task_id", type=_task_id, metavar="TASK_ID")
        if name == "content":
            sub.add_argument(
                "--raw", action="store_true", help="print PLAN.md's text instead of the JSON"
            )

    revise = commands.add_parser(
        "revise", help="write changes into PLAN.md as revision k+1, then ask again"
    )
    revise.add_argument("task_id", type=_task_id, metavar="TASK_ID")
    _add_proposal(revise, new=False)
    _add_turn(revise)

    for name, what in (
        ("confirm", "relay the user's explicit confirmation of revision K, verbatim"),
        ("request-changes", "relay the user's change request for revision K, verbatim"),
    ):
        sub = commands.add_parser(name, help=what)
        sub.add_argument("task_id", type=_task_id, metavar="TASK_ID")
        sub.add_argument(
            "--revision",
            type=int,
            required=True,
            metavar="K",
            help="the revision number the user answered",
        )
        _add_text(sub, "message", "the user's own words, verbatim", required=True)
        _add_turn(sub)

    cancel = commands.add_parser(
        "cancel", help="cancel the plan: Status Cancelled in PLAN.md, then no more runs"
    )
    cancel.add_argument("task_id", type=_task_id, metavar="TASK_ID")
    _add_turn(cancel)

    run = commands.add_parser("run", help="run the plan's job now")
    run.add_argument("task_id", type=_task_id, metavar="TASK_ID")
    run.add_argument(
        "--mode", choices=["force", "due"], default="force", help="force (default) or due"
    )

    runs = commands.add_parser("runs", help="the plan's runs, newest first")
    runs.add_argument("task_id", type=_task_id, metavar="TASK_ID")
    runs.add_argument("--limit", type=int, metavar="N", help="1-200 (default 50)")
    runs.add_argument("--offset", type=int, metavar="N")
    runs.add_argument("--sort-dir", choices=["asc", "desc"])
    return parser


# --- from options to a request ------------------------------------------------------------------


def _text(args: argparse.Namespace, name: str) -> str | None:
    value: str | None = getattr(args, name)
    path: str | None = getattr(args, f"{name}_file")
    return _read_text(path) if path is not None else value


def _schedule(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict[str, Any] | None:
    if args.tz is not None and args.cron is None:
        parser.error("--tz goes with --cron only")
    if args.cron is not None:
        schedule: dict[str, Any] = {"kind": "cron", "expr": args.cron}
        if args.tz is not None:
            schedule["tz"] = args.tz
        return schedule
    if args.every is not None:
        return {"kind": "every", "everyMs": args.every}
    if args.at is not None:
        return {"kind": "at", "at": args.at}
    value: dict[str, Any] | None = args.schedule_json
    return value


def _proposal_body(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for option, wire in (
        ("task_name", "taskName"),
        ("persona", "persona"),
        ("objective", "objective"),
        ("result", "result"),
        ("step", "steps"),
        ("missed", "missed"),
        ("max_lateness", "maxLatenessSeconds"),
        ("overlap", "overlap"),
        ("message", "message"),
    ):
        value = getattr(args, option, None)
        if value is not None:
            body[wire] = value
    schedule = _schedule(args, parser)
    if schedule is not None:
        body["schedule"] = schedule
    return body


def _plan_path(task_id: str, action: str = "") -> str:
    path = f"/api/plans/{urllib.parse.quote(task_id, safe='')}"
    return f"{path}/{action}" if action else path


def _query(path: str, **params: Any) -> str:
    given = {name: value for name, value in params.items() if value is not None}
    return f"{path}?{urllib.parse.urlencode(given)}" if given else path


def build_request(
    args: argparse.Namespace, parser: argparse.ArgumentParser
) -> tuple[str, str, dict[str, Any] | None]:
    """The method, path (with query) and JSON body of a command."""
    command: str = args.command
    turn: dict[str, Any] = {"turnId": args.turn_id} if getattr(args, "turn_id", None) else {}
    if command == "check-reply":
        return "POST", "/api/plans/clarification-check", {"reply": _text(args, "reply")}
    if command == "propose":
        body = _proposal_body(args, parser)
        if args.session_key:
            body["sessionKey"] = args.session_key
        return "POST", "/api/plans/propose", {**body, **turn}
    if command == "list":
        return "GET", _query("/api/plans", limit=args.limit, offset=args.offset), None
    task: str = args.task_id
    if command == "show":
        return "GET", _plan_path(task), None
    if command in ("content", "export"):
        return "GET", _plan_path(task, command), None
    if command == "runs":
        path = _query(
            _plan_path(task, "runs"), limit=args.limit, offset=args.offset, sortDir=args.sort_dir
        )
        return "GET", path, None
    if command == "revise":
        body = _proposal_body(args, parser)
        if not body:
            parser.error("revise: name at least one field to change")
        return "POST", _plan_path(task, "revise"), {**body, **turn}
    if command in ("confirm", "request-changes"):
        body = {"revision": args.revision, "message": _text(args, "message")}
        return "POST", _plan_path(task, command), {**body, **turn}
    if command == "run":
        return "POST", _plan_path(task, "run"), {"mode": args.mode}
    # pause, resume, cancel
    return "POST", _plan_path(task, command), turn


# --- the call -----------------------------------------------------------------------------------


class Unreachable(Exception):
    """Nothing answered at XWORKMATE_URL."""


def call(
    base_url: str, key: str, method: str, path: str, body: dict[str, Any] | None, timeout: float
) -> tuple[int, bytes]:
    """The status and body of one request; HTTP error answers are answers too."""
    data = None if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
    request = urllib.request.Request(  # noqa: S310 (the URL's scheme is checked in main)
        base_url.rstrip("/") + path,
        data=data,
        method=method,
        headers={
            "Authorization": f"Bearer {key}",
            "Accept": "application/json",
            **({"Content-Type": "application/json"} if data is not None else {}),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            return int(response.status), response.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return int(exc.code), exc.read()
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise Unreachable(f"{base_url}: {reason}") from exc


def _fail_usage(parser: argparse.ArgumentParser, message: str) -> NoReturn:
    parser.error(message)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    base_url = os.environ.get("XWORKMATE_URL", "").strip()
    key = os.environ.get("XWORKMATE_API_KEY", "").strip()
    if not base_url:
        _fail_usage(parser, "XWORKMATE_URL is not set (the server's root, e.g. http://host:8000)")
    if urllib.parse.urlsplit(base_url).scheme not in ("http", "https"):
        _fail_usage(parser, f"XWORKMATE_URL must be an http(s) URL, not {base_url!r}")
    if not key:
        _fail_usage(parser, "XWORKMATE_API_KEY is not set (the run's agent key)")
    try:
        method, path, body = build_request(args, parser)
    except (OSError, UnicodeDecodeError) as exc:
        _fail_usage(parser, f"cannot read the text: {exc}")
    try:
        status, raw = call(base_url, key, method, path, body, args.timeout)
    except Unreachable as exc:
        _emit({"error": {"code": "UNREACHABLE", "message": f"no answer from {exc}"}})
        return EXIT_UNREACHABLE
    try:
        answer = json.loads(raw.decode("utf-8"))
    except ValueError:
        _emit(
            {
                "error": {
                    "code": "BAD_ANSWER",
                    "message": f"HTTP {status}, not JSON: {raw[:200].decode('utf-8', 'replace')}",
                }
            }
        )
        return EXIT_SERVER
    if status >= 500:
        _emit(answer)
        return EXIT_SERVER
    if status >= 400:
        _emit(answer)
        error = answer.get("error") if isinstance(answer, dict) else None
        if isinstance(error, dict) and error.get("code") == "BLOCKED":
            # archive-protocol's receipt, as the user is to see it.
            _write(sys.stderr, str(error.get("message", "")).rstrip("\n") + "\n")
        return EXIT_REFUSED
    if args.command == "content" and args.raw and isinstance(answer, dict):
        _write(sys.stdout, str(answer.get("content", "")))
        return EXIT_OK
    _emit(answer)
    if args.command == "check-reply" and not (isinstance(answer, dict) and answer.get("ok")):
        return EXIT_REFUSED
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
