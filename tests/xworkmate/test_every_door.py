"""Every door refuses whoever may not pass it (D-K12, DESIGN rule 5).

The routes come from the resolver, so a route added later is walked too; each
(route, HTTP method) needs a row in DOORS saying what a sample call sends and
what an agent key of another session gets, and a route without one fails
with a message saying to add it. For every API route and method:

- no credentials: 401 in the API's JSON error shape (the envelope under /gateway);
- a revoked key: 401;
- a read-only key (every `:read` scope) on a write operation: 403;
- an agent key bound to another session, naming the victim's session, run,
  plan, task or message: refused with the status its area's rules give
  (403 for naming another session, 404 for another's plan, task or
  message), or, where the rule is that an agent key's call is scoped to its
  own run, answered for its own session only;

and in every case nothing of the victim's changes and nothing of it is in the
answer. The admin's pages refuse an anonymous visitor and a bearer key.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from django.apps import apps
from django.db.models import Q
from django.urls import URLPattern
from django.utils import timezone

from gateway.models import NativeTask, SessionEntry, SessionMapping, TaskRun
from longrun import services as longrun_services
from tests.conftest import ApiClient, configure, url_routes
from tests.gateway.conftest import call, native, prepare
from xworkmate.delivery.services import outbox_enqueue
from xworkmate.methods import get_method
from xworkmate.models import ApiKey
from xworkmate.services import KeyBinding, api_key_create, api_key_revoke

pytestmark = pytest.mark.django_db

VICTIM, VICTIM_RUN, VICTIM_THREAD, VICTIM_TASK = "victim", "vr", "victim-thread", "victim-task"
OWN, OWN_RUN = "agent-s", "agent-r"
# In every record of the victim's; no answer to anyone else may carry it.
SECRET = "VICTIM-SECRET"
VICTIM_RUN_PARAMS = {"openclawSessionKey": VICTIM, "runId": VICTIM_RUN}
VICTIM_PARAMS = {**VICTIM_RUN_PARAMS, "appThreadKey": VICTIM_THREAD}
WRITE_SCOPES = ["gateway:write", "plans:write", "longrun:write", "delivery:write", "metrics:read"]
READ_SCOPES = list(dict.fromkeys(scope.replace(":write", ":read") for scope in WRITE_SCOPES))


@dataclass(frozen=True)
class Op:
    """A sample call of one route and method, and what each caller gets.

    Strings in `path`, `query` and `body` may hold `{plan}`, `{message}` and
    `{ref}`: the victim's plan Task_ID, record message id and artifactRef.
    """

    write: bool  # needs a `:write` scope: a read-only key gets 403
    agent: int  # the status an agent key of another session gets
    path: dict[str, str] = field(default_factory=dict)
    query: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] | None = None
    # Answered for the agent's own run (§13.0): its own gateway rows and task
    # directory may change; the victim's never do.
    own: bool = False


@dataclass(frozen=True)
class Unguarded:
    """A route no key guards, and why."""

    why: str
    docs: bool = False  # the API docs: refused to an anonymous visitor, any key may read them


_PLAN = {"task_id": "{plan}"}
_TASK = {"task": VICTIM_TASK}
_TASK_SET = {
    "task": VICTIM_TASK, "session": "s", "state": "executing", "goal": "g", "done_when": "d",
    "blocked_when": "b", "boundary": "x", "next_check": "10m", "note": "n",
    "origin_session_key": VICTIM,
}
_PROPOSAL = {
    "sessionKey": VICTIM, "turnId": "t-9", "taskName": "巡检", "persona": "助理",
    "objective": "发现异常", "result": "日报", "steps": ["读取库存表"],
    "schedule": {"kind": "cron", "expr": "0 9 * * *", "tz": "Asia/Shanghai"},
}
_MESSAGE = {"revision": 1, "message": "确认", "turnId": "t-9"}
_PREVIEW = {"schedule": {"kind": "every", "everyMs": 3600000}, "count": 1}
_PREPARE = {**VICTIM_PARAMS, "schemaVersion": 1}
_LR = "api/longrun/task-state"

DOORS: dict[tuple[str, str], Op | Unguarded] = {
    **{
        ("", method): Unguarded("a redirect to the admin, which asks for a sign-in")
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE")
    },
    ("healthz", "GET"): Unguarded("the liveness probe of the load balancer"),
    # Prometheus' scrape (D-K26): counts and ages, no session's data.
    ("metrics", "GET"): Op(write=False, agent=200),
    ("api/schema/", "GET"): Unguarded("the OpenAPI document", docs=True),
    ("api/docs/", "GET"): Unguarded("the OpenAPI page", docs=True),
    ("api/ping", "GET"): Op(write=False, agent=200),
    # The outbox's record channel.
    ("api/delivery/pending", "GET"): Op(write=False, agent=403, query={"sessionKey": VICTIM}),
    ("api/delivery/<int:message_id>/ack", "POST"): Op(
        write=True, agent=404, path={"message_id": "{message}"}
    ),
    # Gateway: hooks and native tasks. An agent key's hooks act on its own run.
    ("api/gateway/hooks/session_start", "POST"): Op(
        write=True, agent=200, body={"event": {"context": VICTIM_PARAMS}}, own=True
    ),
    ("api/gateway/hooks/agent_end", "POST"): Op(
        write=True,
        agent=200,
        body={"event": {"runId": VICTIM_RUN, "success": True}, "ctx": {"sessionKey": VICTIM}},
        own=True,
    ),
    ("api/gateway/native-tasks", "POST"): Op(
        write=True,
        agent=403,
        body={"sessionKey": VICTIM, "task": {"taskId": "t1", "status": "succeeded"}},
    ),
    # Gateway methods: an agent key's params are its own run's (§13.0).
    ("gateway", "POST"): Op(
        write=True, agent=409, body={"method": "xworkmate.session.prepare", "params": _PREPARE}
    ),
    ("gateway/<path:method>", "POST"): Op(
        write=True, agent=409, path={"method": "xworkmate.session.prepare"}, body=_PREPARE
    ),
    ("gateway/xworkmate.session.prepare", "POST"): Op(write=True, agent=409, body=_PREPARE),
    ("gateway/xworkmate.tasks.get", "POST"): Op(
        write=False, agent=200, body=VICTIM_PARAMS, own=True
    ),
    ("gateway/xworkmate.artifacts.export", "POST"): Op(
        write=False, agent=200, body=VICTIM_RUN_PARAMS
    ),
    ("gateway/xworkmate.artifacts.collect-and-snapshot", "POST"): Op(
        write=True, agent=200, body=VICTIM_RUN_PARAMS, own=True
    ),
    ("gateway/xworkmate.artifacts.list", "POST"): Op(
        write=False, agent=200, body=VICTIM_RUN_PARAMS
    ),
    ("gateway/xworkmate.artifacts.read", "POST"): Op(
        write=False, agent=400, body={**VICTIM_RUN_PARAMS, "artifactRef": "{ref}"}
    ),
    # Artifacts over REST: the victim's ref does not match the agent's run.
    ("api/artifacts/download", "GET"): Op(
        write=False, agent=400, query={**VICTIM_RUN_PARAMS, "artifactRef": "{ref}"}
    ),
    ("api/artifacts/download", "POST"): Op(
        write=False, agent=400, body={**VICTIM_RUN_PARAMS, "artifactRef": "{ref}"}
    ),
    ("api/artifacts/tool", "GET"): Op(write=False, agent=200),
    ("api/artifacts/tool", "POST"): Op(
        write=False, agent=400, body={"action": "read", "artifactRef": "{ref}"}
    ),
    # Plans: another session's plan is not found; proposing in it is 403.
    ("api/plans/schedule-preview", "POST"): Op(write=False, agent=200, body=_PREVIEW),
    ("api/plans", "GET"): Op(write=False, agent=200),
    ("api/plans/propose", "POST"): Op(write=True, agent=403, body=_PROPOSAL),
    ("api/plans/clarification-check", "POST"): Op(
        write=False, agent=200, body={"reply": "基线：每天 9 点"}
    ),
    ("api/plans/<uuid:task_id>", "GET"): Op(write=False, agent=404, path=_PLAN),
    ("api/plans/<uuid:task_id>/content", "GET"): Op(write=False, agent=404, path=_PLAN),
    ("api/plans/<uuid:task_id>/runs", "GET"): Op(write=False, agent=404, path=_PLAN),
    ("api/plans/<uuid:task_id>/timeline", "GET"): Op(write=False, agent=404, path=_PLAN),
    ("api/plans/<uuid:task_id>", "PUT"): Op(
        write=True, agent=404, path=_PLAN, body={"name": "renamed"}
    ),
    ("api/plans/<uuid:task_id>/export", "GET"): Op(write=False, agent=404, path=_PLAN),
    ("api/plans/<uuid:task_id>/revise", "POST"): Op(
        write=True, agent=404, path=_PLAN, body={"turnId": "t-9", "result": "周报"}
    ),
    ("api/plans/<uuid:task_id>/confirm", "POST"): Op(
        write=True, agent=404, path=_PLAN, body=_MESSAGE
    ),
    ("api/plans/<uuid:task_id>/request-changes", "POST"): Op(
        write=True, agent=404, path=_PLAN, body=_MESSAGE
    ),
    ("api/plans/<uuid:task_id>/pause", "POST"): Op(write=True, agent=404, path=_PLAN, body={}),
    ("api/plans/<uuid:task_id>/resume", "POST"): Op(write=True, agent=404, path=_PLAN, body={}),
    ("api/plans/<uuid:task_id>/cancel", "POST"): Op(write=True, agent=404, path=_PLAN, body={}),
    ("api/plans/<uuid:task_id>/run", "POST"): Op(write=True, agent=404, path=_PLAN, body={}),
    # Long-run mode: another session's task is not found, naming its session is 403,
    # the runs over every session are the bridge's (403); reports cover one's own.
    (f"{_LR}/set", "POST"): Op(write=True, agent=403, body=_TASK_SET),
    (f"{_LR}/show", "GET"): Op(write=False, agent=404, query=_TASK),
    (f"{_LR}/list", "GET"): Op(write=False, agent=200),
    (f"{_LR}/locks", "GET"): Op(write=False, agent=200),
    (f"{_LR}/touch-progress", "POST"): Op(write=True, agent=404, body=_TASK),
    (f"{_LR}/mark-progress-attempt", "POST"): Op(write=True, agent=404, body=_TASK),
    (f"{_LR}/mark-progress-sent", "POST"): Op(write=True, agent=404, body=_TASK),
    (f"{_LR}/mark-progress-unknown", "POST"): Op(write=True, agent=404, body=_TASK),
    (f"{_LR}/mark-progress-failed", "POST"): Op(write=True, agent=404, body=_TASK),
    (f"{_LR}/mark-visible-reply", "POST"): Op(write=True, agent=404, body=_TASK),
    (f"{_LR}/mark-tool-result", "POST"): Op(write=True, agent=404, body=_TASK),
    (f"{_LR}/mark-resume", "POST"): Op(write=True, agent=404, body=_TASK),
    (f"{_LR}/acquire-lock", "POST"): Op(
        write=True, agent=403, body={"session": VICTIM, "task": VICTIM_TASK, "force": True}
    ),
    (f"{_LR}/release-lock", "POST"): Op(write=True, agent=403, body={"session": VICTIM}),
    (f"{_LR}/clear", "POST"): Op(write=True, agent=404, body=_TASK),
    # The original's answer to a task it cannot see: 200 `{"ok": false, "error": "task_not_found"}`.
    ("api/longrun/validate-task-start", "GET"): Op(write=False, agent=200, query=_TASK),
    ("api/longrun/check-foreground-progress", "GET"): Op(write=False, agent=404, query=_TASK),
    ("api/longrun/build-progress-update", "GET"): Op(write=False, agent=404, query=_TASK),
    ("api/longrun/foreground-tick", "GET"): Op(write=False, agent=404, query=_TASK),
    ("api/longrun/work-cycle-tick", "POST"): Op(write=False, agent=404, body=_TASK),
    ("api/longrun/emit-foreground-due", "GET"): Op(write=False, agent=200),
    ("api/longrun/dispatch-foreground-due", "GET"): Op(write=False, agent=200),
    ("api/longrun/keepalive-tick", "GET"): Op(write=False, agent=404, query=_TASK),
    ("api/longrun/emit-keepalive-resume", "GET"): Op(write=False, agent=404, query=_TASK),
    ("api/longrun/run-keepalive-once", "POST"): Op(write=True, agent=403, body={}),
    ("api/longrun/watchdog", "GET"): Op(write=False, agent=200),
    ("api/longrun/recover-due-tasks", "GET"): Op(write=False, agent=200),
    ("api/longrun/emit-recovery-message", "GET"): Op(write=False, agent=200),
    ("api/longrun/build-sessions-send-payloads", "GET"): Op(write=False, agent=200),
    ("api/longrun/run-watchdog-once", "POST"): Op(write=True, agent=403, body={}),
    ("api/longrun/cleanup-state", "POST"): Op(write=True, agent=403, body={"apply": True}),
    ("api/longrun/detect-trigger", "POST"): Op(
        write=False, agent=403, body={"message": "长任务模式", "session_key": VICTIM}
    ),
}

_HANDLERS = ("get", "post", "put", "patch", "delete")
_PARAM = re.compile(r"<(?:\w+:)?(\w+)>")


def _view_class(pattern: URLPattern) -> Any:
    callback = pattern.callback
    return getattr(callback, "cls", None) or getattr(callback, "view_class", None)


def _methods(pattern: URLPattern) -> list[str]:
    """The methods a route's view handles (a plain function view: GET)."""
    view = _view_class(pattern)
    if view is None:
        return ["GET"]
    return [name.upper() for name in _HANDLERS if hasattr(view, name)]


def _doors() -> list[tuple[str, str, URLPattern]]:
    """(route, method, pattern) of every route outside the admin, from the resolver."""
    found = []
    for route, pattern in url_routes():
        if route.startswith("admin/"):
            continue
        for method in _methods(pattern):
            found.append((route, method, pattern))
    return found


def _admin_routes() -> list[str]:
    return [route for route, _ in url_routes() if route.startswith("admin/")]


# --- the scene: a victim with something in every app, and the agent's own run ------------------


@dataclass
class Scene:
    tokens: dict[str, str]
    values: dict[str, str]
    roots: list[Path]

    def client(self, who: str | None) -> ApiClient:
        return ApiClient(self.tokens[who] if who else None)


@pytest.fixture
def scene(tmp_path: Path, settings: Any) -> Scene:
    workspace = tmp_path / "ws"
    plans_home = tmp_path / "plans"
    workspace.mkdir()
    plans_home.mkdir()
    configure(settings, "workspace", roots=(str(workspace.resolve()),))
    configure(settings, "plans", workspace=str(plans_home.resolve()))
    tokens = {}
    for name, scopes, binding in (
        ("bridge", WRITE_SCOPES, None),
        ("reader", READ_SCOPES, None),
        ("revoked", WRITE_SCOPES, None),
        ("agent", WRITE_SCOPES, KeyBinding(session_key=OWN, run_id=OWN_RUN)),
    ):
        key, tokens[name] = api_key_create(name=name, scopes=scopes, binding=binding)
        if name == "revoked":
            api_key_revoke(key=key, now=timezone.now())
    bridge = ApiClient(tokens["bridge"])
    # The gateway: the victim's run and a file in it; the agent's own run beside it.
    prepare(bridge, **VICTIM_PARAMS)
    (workspace / f"tasks/{VICTIM}/{VICTIM_RUN}/{SECRET}.md").write_text(SECRET)
    prepare(bridge, appThreadKey="agent-thread", openclawSessionKey=OWN, runId=OWN_RUN)
    status, exported = call(bridge, "xworkmate.artifacts.export", VICTIM_RUN_PARAMS)
    assert status == 200, exported
    ref = exported["payload"]["artifacts"][0]["artifactRef"]
    recorded = native(bridge, VICTIM, taskId="t1", runId=VICTIM_RUN, status="running", note=SECRET)
    assert recorded.status_code == 201, recorded.content
    # Plans: the victim's plan, confirmed by the bridge in a later turn (a job exists).
    body = {**_PROPOSAL, "turnId": "t-1", "objective": SECRET}
    proposed = bridge.post("/api/plans/propose", body)
    assert proposed.status_code == 201, proposed.content
    plan = proposed.json()["plan"]["taskId"]
    confirmed = bridge.post(f"/api/plans/{plan}/confirm", {**_MESSAGE, "turnId": "t-2"})
    assert confirmed.status_code == 200, confirmed.content
    # Long-run mode: the victim's task holding its session's lock.
    longrun_services.task_set(
        name=VICTIM_TASK, session=SECRET, state="executing", goal=SECRET, done_when="d",
        blocked_when="b", boundary="x", next_check="10m", note=SECRET,
        origin_session_key=VICTIM, by="test", now=timezone.now(),
    )
    # The outbox: a message waiting for the victim's session.
    message = outbox_enqueue(purpose="longrun.progress", target=VICTIM, body=SECRET,
                             idempotency_key="victim-1", now=timezone.now())
    values = {"plan": plan, "message": str(message.pk), "ref": ref}
    return Scene(tokens, values, [workspace, plans_home])


def _fill(value: Any, values: dict[str, str]) -> Any:
    if isinstance(value, str):
        return value.format_map(values)
    if isinstance(value, dict):
        return {k: _fill(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, values) for v in value]
    return value


def _path(scene: Scene, route: str, op: Op) -> str:
    missing = set(_PARAM.findall(route)) - set(op.path)
    assert not missing, f"the DOORS row of {route!r} needs path params {sorted(missing)}"
    return "/" + _PARAM.sub(lambda m: _fill(op.path[m.group(1)], scene.values), route)


def _send(scene: Scene, who: str | None, route: str, method: str, op: Op) -> Any:
    path = _path(scene, route, op)
    if op.query:
        path += "?" + urlencode(_fill(op.query, scene.values))
    client = scene.client(who)
    if method == "GET":
        return client.get(path)
    if method == "PUT":
        return client.put(path, _fill(op.body or {}, scene.values))
    return client.post(path, _fill(op.body or {}, scene.values))


# What an agent key may change when its call is scoped to its own run.
_OWN_ROWS = {
    SessionEntry: Q(session_key=OWN),
    SessionMapping: Q(session__session_key=OWN),
    TaskRun: Q(session__session_key=OWN),
    NativeTask: Q(session_key=OWN),
}
_APPS = ("xworkmate", "gateway", "delivery", "plans", "longrun", "auth")


def _stored(scene: Scene, *, but_own: bool = False) -> dict[str, Any]:
    """Every row of the service's tables and every file of its workspaces.

    A key's last use is left out (reading it is a use); with `but_own`, so are
    the agent's own gateway rows and task directory.
    """
    rows: dict[str, Any] = {}
    for model in apps.get_models():
        if model._meta.app_label not in _APPS:
            continue
        records = model._default_manager.order_by("pk")
        if but_own and model in _OWN_ROWS:
            records = records.exclude(_OWN_ROWS[model])
        names = [f.attname for f in model._meta.concrete_fields if not (
            model is ApiKey and f.name == "last_used_at")]
        rows[model._meta.label] = list(records.values_list(*names))
    own_dir = f"tasks/{OWN}/"
    for root in scene.roots:
        for path in sorted(root.rglob("*")):
            relative = str(path.relative_to(root))
            if but_own and relative.startswith(own_dir):
                continue
            rows[f"{root.name}/{relative}"] = (
                hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
            )
    return rows


def _content(response: Any) -> bytes:
    """The answer's bytes, a download's streamed ones included."""
    if response.streaming:
        return b"".join(response.streaming_content)
    return bytes(response.content)


def _error(response: Any, route: str) -> dict[str, Any]:
    """The API's error shape: the envelope under /gateway, `{"error"}` elsewhere."""
    assert response["Content-Type"] == "application/json", response.content[:200]
    body = response.json()
    if route.startswith("gateway"):
        assert set(body) == {"ok", "error"} and body["ok"] is False, body
    else:
        assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message"}, body
    return dict(body["error"])


def _guarded() -> list[tuple[str, str, Op]]:
    """Every guarded (route, method) of the resolver; one without a row fails here."""
    unlisted = [(route, method) for route, method, _ in _doors() if (route, method) not in DOORS]
    assert not unlisted, (
        f"routes without a row in DOORS (tests/xworkmate/test_every_door.py): {unlisted}; "
        "add each with its sample call and what an agent key of another session gets"
    )
    return [(r, m, op) for r, m, _ in _doors() if isinstance(op := DOORS[(r, m)], Op)]


def _walk_doors(scene: Scene, who: str, check: Any, *, writes_only: bool = False) -> None:
    """Send each door's sample call as `who`; `check` says what is wrong with the answer.

    Nothing stored may change, but an agent key's own run where its call is scoped to it.
    """
    failures = []
    for route, method, op in _guarded():
        if writes_only and not op.write:
            continue
        but_own = op.own and who == "agent"
        before = _stored(scene, but_own=but_own)
        response = _send(scene, who or None, route, method, op)
        problem = check(route, op, response)
        if not problem and _stored(scene, but_own=but_own) != before:
            problem = "the victim's stored state changed" if but_own else "stored state changed"
        if not problem and SECRET.encode() in _content(response):
            problem = "the answer shows the victim's data"
        if problem:
            failures.append(f"{method} /{route}: {problem} ({response.status_code}: "
                            f"{_content(response)[:200]!r})")
    assert not failures, "\n".join(failures)


# --- the table itself -------------------------------------------------------------------------


def test_it_has_a_row_for_every_route_and_no_stale_row(db):
    served = {(route, method) for route, method, _ in _doors()}
    assert served - set(DOORS) == set(), (
        "add these routes to DOORS in tests/xworkmate/test_every_door.py with a sample call"
    )
    assert set(DOORS) - served == set(), "these DOORS rows name no route the resolver serves"


def test_it_marks_as_write_exactly_the_operations_that_need_a_write_scope(db):
    """The table's `write` is the view's own scope, so the read-only check tests the real rule."""
    wrong = []
    for route, method, pattern in _doors():
        op = DOORS.get((route, method))
        if not isinstance(op, Op):
            continue
        view = _view_class(pattern)
        if route.startswith("gateway"):
            name = op.path.get("method") or (op.body or {}).get("method") or route[len("gateway/"):]
            scope = get_method(name).scope
        else:  # a view without a scope of its own takes any key (api/ping)
            # A view may need another scope for one method (PUT of a plan: plans:write).
            scope = getattr(view, "method_scopes", {}).get(
                method, getattr(view, "required_scope", "")
            )
        if scope.endswith(":write") != op.write:
            wrong.append(f"{method} /{route}: the view needs {scope}")
    assert not wrong, wrong


# --- the four callers -------------------------------------------------------------------------


def test_it_answers_401_without_credentials_on_every_door(scene):
    def check(route: str, op: Op, response: Any) -> str:
        if response.status_code != 401:
            return "not 401"
        return "" if _error(response, route)["code"] == "UNAUTHORIZED" else "not UNAUTHORIZED"

    _walk_doors(scene, "", check)
    # OPTIONS, which DRF answers for every view, is no way around it.
    for route, _, op in _guarded():
        answer = scene.client(None).client.options(_path(scene, route, op))
        assert answer.status_code == 401, route


def test_it_answers_401_to_a_revoked_key_on_every_door(scene):
    def check(route: str, op: Op, response: Any) -> str:
        if response.status_code != 401:
            return "not 401"
        error = _error(response, route)
        return "" if error["message"] == "API key has been revoked" else f"said {error}"

    _walk_doors(scene, "revoked", check)


def test_it_refuses_a_read_only_key_every_write(scene):
    def check(route: str, op: Op, response: Any) -> str:
        if response.status_code != 403:
            return "not 403"
        error = _error(response, route)
        ok = error["code"] == "FORBIDDEN" and "lacks scope" in error["message"]
        return "" if ok else f"said {error}"

    _walk_doors(scene, "reader", check, writes_only=True)


def test_it_keeps_an_agent_key_out_of_another_sessions_data_on_every_door(scene):
    def check(route: str, op: Op, response: Any) -> str:
        if response.status_code != op.agent:
            return f"expected {op.agent}"
        refusal = op.agent >= 400 and _error(response, route)["code"] not in (
            "FORBIDDEN", "NOT_FOUND", "INVALID_REQUEST", "CONFLICT",
        )
        return "not a refusal's code" if refusal else ""

    _walk_doors(scene, "agent", check)


def test_it_shows_the_docs_to_no_anonymous_visitor_and_no_revoked_key(scene):
    for (route, _), door in DOORS.items():
        if isinstance(door, Unguarded) and door.docs:
            anonymous = scene.client(None).get(f"/{route}")
            assert anonymous.status_code == 401 or (
                anonymous.status_code == 302 and "/admin/login/" in anonymous["Location"]
            ), route
            assert scene.client("revoked").get(f"/{route}").status_code == 401, route


_ADMIN_SAMPLES = {"app_label": "plans", "url": "anything"}


def _admin_path(route: str) -> str:
    """An admin route with sample values (its app index is a regular expression)."""
    sample = lambda m: _ADMIN_SAMPLES.get(m.group(1), "1")  # noqa: E731
    route = re.sub(r"\(\?P<(\w+)>[^)]*\)", sample, route)
    return "/" + _PARAM.sub(sample, route).replace("^", "").replace("$", "")


def test_it_refuses_every_admin_page_to_an_anonymous_visitor_and_to_a_bearer_key(scene):
    """The admin's own sign-in page is the way in; every other page sends you there."""
    bearer = scene.client("bridge")
    opened = []
    for route in _admin_routes():
        if route in ("admin/login/", "admin/logout/"):
            continue
        path = _admin_path(route)
        for who in (scene.client(None), bearer):
            for answer in (who.get(path), who.client.post(path, headers=who._headers())):
                to_login = answer.status_code == 302 and "/admin/login/" in answer["Location"]
                if not to_login and answer.status_code not in (403, 404, 405):
                    opened.append((path, who.token is not None, answer.status_code))
    assert len(_admin_routes()) > 20 and not opened, opened
