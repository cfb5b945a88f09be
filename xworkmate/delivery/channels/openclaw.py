"""The OpenClaw channel: a message is handed to the `openclaw` CLI, and it says what happened.

Every send runs the binary once, without a shell (argv is a list, so a message
is one argument whatever it contains), with stdin closed, its output captured
and bounded, and a deadline after which the process and its whole process
group are killed:

- purpose ``longrun.resume``:
  ``openclaw agent --session-id <sid> --message <body> --json``, where ``<sid>``
  is resolved (D-B13): the target's entry in the sessions index (a JSON map
  ``sessionKey -> {"sessionId": ...}``, read again on every send because
  OpenClaw rewrites it as it runs), else the target itself when it is a UUID,
  else nothing is run and the send FAILED;
- every other purpose:
  ``openclaw sessions send --session-key <target> --message <body> --json``.

What the process answers decides the outcome (D-B10: only a confirmation is a
send; the original long-run scripts counted a spawned process as "sent"):

- exit 0 and a JSON answer: SENT, unless its ``status`` says otherwise
  (``timeout`` is UNKNOWN, ``error`` is FAILED, ``ok`` / ``accepted`` / no
  status is SENT, any other status is UNKNOWN: it confirms nothing);
- exit 0 and an answer that is not JSON: FAILED;
- exit 0 and an answer larger than `STDOUT_LIMIT`: UNKNOWN (the CLI reported
  success, but its status could not be read);
- a non-zero exit: FAILED, with the end of stderr;
- killed by a signal we did not send: UNKNOWN (it may have died after sending);
- no answer within the timeout: UNKNOWN, after the process group was killed;
- the binary cannot be started: FAILED (nothing ran).

Plain Python: the standard library only, no Django.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Any

from xworkmate.delivery.channels.base import Envelope, Outcome, Result

__all__ = ["RESUME_PURPOSE", "STDERR_TAIL", "STDOUT_LIMIT", "OpenClawChannel", "is_uuid"]

RESUME_PURPOSE = "longrun.resume"
# The most of stdout that is kept (and parsed); the rest is read and dropped.
STDOUT_LIMIT = 1 << 20
# How much of the end of stderr a failure's detail shows.
STDERR_TAIL = 400
# How much of the start of stdout a detail shows.
_ANSWER_START = 200
_READ_CHUNK = 65536

_UUID_RE = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)
_SENT_STATUSES = frozenset({"ok", "accepted"})


def is_uuid(text: str) -> bool:
    """Whether `text` is a UUID in its canonical 8-4-4-4-12 hex form, and nothing else.

    Stricter than `uuid.UUID()` (which also takes braces, a ``urn:uuid:``
    prefix or 32 bare hex digits) and than the original's "32 characters or
    more containing '-'", which let any long session key pass as an id (D-B13).
    """
    return _UUID_RE.fullmatch(text) is not None


@dataclass(frozen=True)
class _Exited:
    returncode: int
    stdout: bytes
    stdout_overflow: bool
    stderr_tail: bytes


class OpenClawChannel:
    """Sends through the local ``openclaw`` CLI (`sessions send`, or `agent` for a resume).

    ``deduplicates`` is False: the CLI has no idempotency key, so a message sent
    twice arrives twice. A send that ended UNKNOWN (a timeout, a killed process)
    may well have reached the session already, so the outbox must not send it
    again on its own; a person decides.
    """

    kind = "openclaw"
    deduplicates = False

    def __init__(
        self,
        *,
        name: str,
        binary: str = "openclaw",
        sessions_index: str = "~/.openclaw/agents/main/sessions/sessions.json",
        timeout: float = 10.0,
    ) -> None:
        if not timeout > 0:
            raise ValueError(f"timeout must be positive, not {timeout!r}")
        self.name = name
        self.binary = binary
        self.sessions_index = sessions_index
        self.timeout = float(timeout)

    # -- the Channel interface ------------------------------------------------

    def send(self, envelope: Envelope) -> Result:
        target = envelope.target
        if not target.strip():
            return Result(Outcome.FAILED, "no target session key")
        if envelope.purpose == RESUME_PURPOSE:
            session_id, source = self._resolve_session_id(target)
            if session_id is None:
                return Result(Outcome.FAILED, f"missing session id for {target}")
            argv = self.resume_argv(session_id, envelope.body)
            result = self._run(argv)
            return Result(result.outcome, f"session {session_id} ({source}): {result.detail}")
        return self._run(self.send_argv(target, envelope.body))

    # -- argv -----------------------------------------------------------------

    def send_argv(self, session_key: str, body: str) -> list[str]:
        binary = os.path.expanduser(self.binary)
        return [
            binary,
            "sessions",
            "send",
            "--session-key",
            session_key,
            "--message",
            body,
            "--json",
        ]

    def resume_argv(self, session_id: str, body: str) -> list[str]:
        binary = os.path.expanduser(self.binary)
        return [binary, "agent", "--session-id", session_id, "--message", body, "--json"]

    # -- session ids (D-B13) --------------------------------------------------

    def _resolve_session_id(self, target: str) -> tuple[str | None, str]:
        """The session id for `target` and where it came from, or (None, "")."""
        entry = self._index_entry(target)
        if entry is not None:
            return entry, "sessions index"
        if is_uuid(target):
            return target, "target is a UUID"
        return None, ""

    def _index_entry(self, target: str) -> str | None:
        """The target's ``sessionId`` in the sessions index, read now; None if there is none.

        A missing, unreadable or malformed index is "no entry". An empty path
        means no index (the original's shell helpers passed an empty path, which
        named the current directory).
        """
        if not self.sessions_index.strip():
            return None
        path = os.path.expanduser(self.sessions_index)
        try:
            with open(path, "rb") as f:
                data: Any = json.load(f)
        except (OSError, ValueError, RecursionError):
            return None
        if not isinstance(data, dict):
            return None
        entry = data.get(target)
        if not isinstance(entry, dict):
            return None
        session_id = entry.get("sessionId")
        if not isinstance(session_id, str) or not session_id.strip():
            return None
        return session_id

    # -- running the binary ---------------------------------------------------

    def _run(self, argv: list[str]) -> Result:
        try:
            # argv is a list and no shell is involved: the message is one argument.
            proc = subprocess.Popen(  # noqa: S603
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # its own process group, killed as a whole
            )
        except FileNotFoundError:
            return Result(Outcome.FAILED, f"binary not found: {argv[0]}")
        except OSError as exc:
            return Result(Outcome.FAILED, f"cannot run {argv[0]}: {exc}")
        except ValueError as exc:  # a NUL character: no argv can carry it
            return Result(Outcome.FAILED, f"cannot pass the message as an argument: {exc}")
        exited = self._collect(proc)
        if exited is None:
            return Result(
                Outcome.UNKNOWN, f"no answer within {self.timeout:g} s; the process was killed"
            )
        return _classify(exited)

    def _collect(self, proc: subprocess.Popen[bytes]) -> _Exited | None:
        """Read the process's output until it ends or the deadline; None if it was killed."""
        if proc.stdout is None or proc.stderr is None:  # pragma: no cover (PIPE above)
            raise RuntimeError("the process has no output pipes")
        deadline = time.monotonic() + self.timeout
        stdout = bytearray()
        overflow = False
        stderr = bytearray()
        selector = selectors.DefaultSelector()
        try:
            selector.register(proc.stdout, selectors.EVENT_READ)
            selector.register(proc.stderr, selectors.EVENT_READ)
            while selector.get_map():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                for key, _events in selector.select(remaining):
                    chunk = os.read(key.fd, _READ_CHUNK)
                    if not chunk:
                        selector.unregister(key.fileobj)
                    elif key.fileobj is proc.stdout:
                        room = STDOUT_LIMIT - len(stdout)
                        if len(chunk) > room:
                            overflow = True
                        stdout += chunk[: max(room, 0)]
                    else:
                        stderr += chunk
                        del stderr[: max(len(stderr) - STDERR_TAIL, 0)]
            try:
                returncode = proc.wait(timeout=max(deadline - time.monotonic(), 0))
            except subprocess.TimeoutExpired:
                # Still running at the deadline: it is killed below, outcome unknown.
                return None
            if selector.get_map():
                # It exited, but something it started still holds its output open
                # past the deadline: the answer so far is what there is.
                _kill_group(proc)
            return _Exited(returncode, bytes(stdout), overflow, bytes(stderr))
        finally:
            selector.close()
            if proc.returncode is None:
                _kill_group(proc)
                proc.wait()
            proc.stdout.close()
            proc.stderr.close()


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process's group (it leads its own session), or at least the process."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        with contextlib.suppress(OSError):
            proc.kill()


def _classify(exited: _Exited) -> Result:
    code = exited.returncode
    if code < 0:
        tail = _text(exited.stderr_tail)
        return Result(
            Outcome.UNKNOWN,
            f"killed by signal {-code} before it answered" + (f": {tail}" if tail else ""),
        )
    if code != 0:
        tail = _text(exited.stderr_tail) or _start(exited.stdout) or "(no output)"
        return Result(Outcome.FAILED, f"exit {code}: {tail}")
    if exited.stdout_overflow:
        return Result(
            Outcome.UNKNOWN,
            f"exit 0 but the answer is larger than {STDOUT_LIMIT} bytes: {_start(exited.stdout)}",
        )
    try:
        answer: Any = json.loads(exited.stdout.decode("utf-8"))
    except (ValueError, RecursionError):
        return Result(Outcome.FAILED, f"exit 0 but the answer is not JSON: {_start(exited.stdout)}")
    status = answer.get("status") if isinstance(answer, dict) else None
    if status is None:
        return Result(Outcome.SENT, f"no status: {_start(exited.stdout)}")
    label = status.strip().lower() if isinstance(status, str) else None
    if label in _SENT_STATUSES:
        return Result(Outcome.SENT, f"status {label}: {_start(exited.stdout)}")
    if label == "timeout":
        return Result(Outcome.UNKNOWN, f"status timeout: {_reason(answer, exited.stdout)}")
    if label == "error":
        return Result(Outcome.FAILED, f"status error: {_reason(answer, exited.stdout)}")
    return Result(
        Outcome.UNKNOWN,
        f"status {json.dumps(status)[:40]} confirms nothing: {_start(exited.stdout)}",
    )


def _reason(answer: dict[str, Any], stdout: bytes) -> str:
    error = answer.get("error")
    if isinstance(error, str) and error:
        return error
    if error is not None:
        return json.dumps(error, ensure_ascii=False)[:_ANSWER_START]
    return _start(stdout)


def _start(data: bytes) -> str:
    return data[: _ANSWER_START * 4].decode("utf-8", "replace").strip()[:_ANSWER_START]


def _text(data: bytes) -> str:
    return data[-STDERR_TAIL:].decode("utf-8", "replace").strip()
