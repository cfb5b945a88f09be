"""Workspace roots on other hosts' disks: their file work runs there (D-K31).

Agent workspaces live on the OpenClaw hosts. `[workspace.hosts]` names the host
whose disk holds a root; every file operation on that root (an artifact export,
a session's scope directory, a PLAN.md read or write, a run's output folder)
then runs in a Celery worker on that host, which serves the queue
`files@<host>` (a worker whose `XWORKMATE_HOST` names the host subscribes to
it). The process that needs the answer sends the operation there and waits
for it, at most `workspace.host_wait`; a host whose worker is away is a 503
`UNAVAILABLE` that names the host and the queue, never a hang. A root no host
is named for is on a disk every process reaches, and its operations run in
the caller, as they always did: with one host nothing changes.

Operations are registered by name (apps do it in their AppConfig.ready()), so
what travels is a name and JSON arguments, and what comes back is JSON: the
result, or the refusal the operation raised (its type, message and
attributes), raised again in the caller as if the operation had run there.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, cast

from django.conf import settings

from xworkmate.config.workspace import WORKSPACE
from xworkmate.lib.errors import HostUnavailableError, InputError

logger = logging.getLogger(__name__)

QUEUE_PREFIX = "files@"
TASK_NAME = "xworkmate.files.run"

# The exception types that travel back as refusals (with their subclasses): what
# the operations raise for bad input. Anything else is a failure of the host.
_TRAVELLING: list[type[Exception]] = [InputError]
# Where those types live: the service's own packages, nothing else is imported.
_PACKAGES = frozenset({"xworkmate", "gateway", "artifacts", "plans", "longrun"})


@dataclass(frozen=True)
class FileOperation:
    name: str
    run: Callable[..., Any]  # keyword arguments and result: JSON values


_OPERATIONS: dict[str, FileOperation] = {}


def register_file_operation(
    name: str, run: Callable[..., Any], *, refusals: tuple[type[Exception], ...] = ()
) -> None:
    """Make `run` callable on the host of a workspace as `name`; `refusals` are the
    exception types (beyond InputError) it raises for bad input, which travel back."""
    if name in _OPERATIONS and _OPERATIONS[name].run is not run:
        raise ValueError(f"file operation {name!r} is already registered")
    _OPERATIONS[name] = FileOperation(name, run)
    _TRAVELLING.extend(t for t in refusals if t not in _TRAVELLING)


def queue_of(host: str) -> str:
    return f"{QUEUE_PREFIX}{host}"


def this_host() -> str:
    return str(WORKSPACE.of(settings.XWORKMATE).this_host)


def _parts(path: str) -> tuple[str, ...]:
    return PurePath(os.path.normpath(os.path.expanduser(path))).parts


def host_of(path: str | None) -> str:
    """The host whose disk holds `path` ("" = every process's), from the configured roots.

    Decided on the path's text, never on the disk: the disk may be another host's.
    A path in no root (or None, the default workspace) is judged as the first root:
    the operation itself then refuses a path outside the roots, on that host.
    """
    workspace = WORKSPACE.of(settings.XWORKMATE)
    if not workspace.hosts:
        return ""
    candidate = _parts(path) if path else _parts(workspace.roots[0])
    best: tuple[int, str] | None = None
    for root in workspace.roots:
        root_parts = _parts(root)
        if candidate[: len(root_parts)] == root_parts and (
            best is None or len(root_parts) > best[0]
        ):
            best = (len(root_parts), workspace.hosts.get(root, ""))
    if best is None:
        return workspace.hosts.get(workspace.roots[0], "")
    return best[1]


def run_on_host(host: str, operation: str, /, **arguments: Any) -> Any:
    """`operation(**arguments)` on `host`: here when this process is on it (or the root
    has no host), else through `files@<host>`, waiting at most `workspace.host_wait`."""
    if not host or host == this_host():
        return _OPERATIONS[operation].run(**arguments)
    return _remote(host, operation, arguments)


def _remote(host: str, operation: str, arguments: Mapping[str, Any]) -> Any:
    from celery import current_app
    from celery.exceptions import TimeoutError as ResultTimeout
    from kombu.exceptions import OperationalError as BrokerError

    wait = WORKSPACE.of(settings.XWORKMATE).host_wait.total_seconds()
    queue = queue_of(host)
    try:
        # By name (the task module imports the periodic jobs, which import Celery's app).
        # `expires`: a message no worker took within the wait is dropped unrun by the
        # worker that finally takes it, so an answer of "away" means it did not run.
        result = current_app.send_task(
            TASK_NAME, args=(operation, dict(arguments), host), queue=queue, expires=wait
        )
    except BrokerError as exc:
        raise HostUnavailableError(
            f"workspace host {host!r} cannot be reached: the broker is unavailable ({exc})"
        ) from exc
    try:
        answer = result.get(timeout=wait, propagate=False, disable_sync_subtasks=False)
    except ResultTimeout:
        raise HostUnavailableError(_away(host, queue, wait, _state(result))) from None
    succeeded = result.successful()  # read before the answer is dropped from the store
    _forget(result)
    if not succeeded:
        # The operation failed on the host the way it would have failed here: a bug
        # or a broken disk, logged there with its traceback; here a server error.
        raise RuntimeError(f"file operation {operation} failed on host {host!r}: {answer!r}")
    return _unpack(answer)


def _forget(result: Any) -> None:
    """Drop the answer from the result store once read: an artifact's bytes must not sit
    in Redis for the result's lifetime. Best effort; it expires anyway."""
    try:
        result.forget()
    except Exception:
        logger.debug("could not drop the answer of %s", result.id, exc_info=True)


def _state(result: Any) -> str:
    try:
        return str(result.state)
    except Exception:  # noqa: BLE001 (the backend is what may be away)
        return "UNKNOWN"


def _away(host: str, queue: str, wait: float, state: str) -> str:
    waited = f"{wait:g}s"
    if state == "STARTED":
        return (
            f"workspace host {host!r} began the operation and did not answer within "
            f"{waited}; it may still complete (queue {queue})"
        )
    return (
        f"workspace host {host!r} did not answer within {waited}: no worker serving "
        f"{queue} took the operation, and it will not run"
    )


# --- what travels back --------------------------------------------------------------------


def execute(operation: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Run a registered operation here and pack its outcome for the caller (the task)."""
    found = _OPERATIONS.get(operation)
    if found is None:
        # An older or newer worker than its caller: a failure of the deployment.
        raise LookupError(f"unknown file operation {operation!r} on host {this_host()!r}")
    try:
        return {"result": found.run(**arguments)}
    except tuple(_TRAVELLING) as exc:
        return {"refusal": _pack(exc)}


def _pack(exc: Exception) -> dict[str, Any]:
    kind = type(exc)
    return {
        "type": f"{kind.__module__}:{kind.__qualname__}",
        "args": list(exc.args),
        "attributes": {k: v for k, v in vars(exc).items() if _is_json(v)},
    }


def _is_json(value: object) -> bool:
    return value is None or isinstance(value, str | int | float | bool | list | dict)


def _unpack(answer: object) -> Any:
    if not isinstance(answer, dict):
        raise RuntimeError(f"a files worker answered {answer!r}")
    if "refusal" not in answer:
        return answer.get("result")
    raise _rebuild(answer["refusal"])


def _rebuild(packed: Mapping[str, Any]) -> Exception:
    """The refusal as the operation raised it, rebuilt without calling its __init__
    (whose arguments differ by type) from its args and attributes."""
    module_name, _, qualname = str(packed.get("type", "")).partition(":")
    if module_name.partition(".")[0] not in _PACKAGES:
        return RuntimeError(f"a files worker answered a refusal of type {packed.get('type')!r}")
    kind: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        kind = getattr(kind, part)
    if not (isinstance(kind, type) and issubclass(kind, tuple(_TRAVELLING))):
        return RuntimeError(f"a files worker answered a refusal of type {packed.get('type')!r}")
    exc = cast(Exception, kind.__new__(kind))
    exc.args = tuple(packed.get("args", ()))
    vars(exc).update(packed.get("attributes", {}))
    return exc
