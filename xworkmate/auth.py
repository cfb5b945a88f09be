"""Who is calling (D-K12): bearer API keys for DRF, the one `Caller` object, scope checks.

A request carries `Authorization: Bearer xwm_...`. Unknown or revoked keys
get 401; a valid key without the scope a view needs gets 403. Scopes are
`<area>:read` / `<area>:write` for gateway, plans, longrun and delivery; write
implies read (xworkmate.policies.scope_allows).

Every door (API views, gateway methods, hooks, admin actions, the command
line) asks a `Caller` who it is and what it may touch, and nothing else
looks at a key's binding: an agent key bound to a session and run acts on
that session, speaks for that run, and is named the same way in every log.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.contrib.auth.models import User
from django.utils import timezone
from django.utils.translation import gettext, gettext_lazy
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed, PermissionDenied, ValidationError
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from xworkmate import logs
from xworkmate.lib.jstext import js_trim
from xworkmate.models import ApiKey
from xworkmate.policies import last_used_is_stale, scope_allows
from xworkmate.selectors import api_key_for_token
from xworkmate.services import api_key_touch

if TYPE_CHECKING:
    from django.utils.functional import _StrPromise

TURN_HELP = (
    "the conversation turn the write comes from (e.g. the bridge's run id); an agent key "
    "always speaks for its own run and may leave it out"
)


@dataclass(frozen=True)
class Caller:
    """One caller: its key or its person, its scopes, and an agent key's binding.

    Built once per request (it is `request.user` of a key-authenticated call,
    so DRF keeps it for the request), by the admin for a signed-in person, or
    named by the command line. `name` is what every log and `written_by` /
    `by` field records: `api-key:<name>`, `user:<username>`, or `cli`.
    """

    name: str
    key: ApiKey | None = None
    person: User | None = None
    scopes: tuple[str, ...] = ()
    # An agent key's binding (§13.0, the host's trusted `sessionScope`); all
    # empty for the bridge's keys, people and system callers.
    bound_session: str = ""
    bound_run: str = ""
    bound_workspace: str = ""
    bound_artifact_scope: str = ""

    # What Django and DRF read of `request.user`; a Caller stands there for a key.
    is_authenticated = True
    is_anonymous = False

    @classmethod
    def for_key(cls, key: ApiKey) -> Caller:
        bound = key.is_bound
        return cls(
            name=f"api-key:{key.name}",
            key=key,
            scopes=tuple(key.scopes),
            bound_session=key.bound_session_key if bound else "",
            bound_run=key.bound_run_id if bound else "",
            bound_workspace=key.bound_workspace_dir if bound else "",
            bound_artifact_scope=key.bound_artifact_scope if bound else "",
        )

    @classmethod
    def for_person(cls, user: object) -> Caller:
        """A signed-in person (the admin, or a staff session on the API docs and downloads)."""
        if isinstance(user, User) and user.is_authenticated:
            return cls(name=f"user:{user.get_username()}", person=user)
        return _NOBODY

    @classmethod
    def command_line(cls) -> Caller:
        """The operator at `manage.py`: no key, no person, nothing to confine."""
        return cls(name="cli")

    def __str__(self) -> str:
        return self.name

    @property
    def is_agent(self) -> bool:
        """A key bound to one session and run: an adversary confined to them."""
        return bool(self.bound_session)

    @property
    def confined_to(self) -> str | None:
        """The session an agent key acts in; None for everyone else."""
        return self.bound_session or None

    @property
    def agent_key_issued_at(self) -> datetime | None:
        """When an agent key was issued, which is when its run began; None for anyone else."""
        return self.key.created_at if self.is_agent and self.key is not None else None

    @property
    def is_staff(self) -> bool:
        return self.person is not None and self.person.is_staff

    def may(self, scope: str) -> bool:
        """Whether the key carries `scope` (or its write twin); people and the CLI hold none."""
        return self.key is not None and scope_allows(self.scopes, scope)

    def turn(self, named: str) -> str:
        """The turn a plans write comes from: an agent key's own run, whatever it claims (D-C14).

        The bridge's unbound keys relay the user's turns and must name one.
        """
        if self.is_agent:
            if named and named != self.bound_run:
                raise PermissionDenied("turnId: an agent key speaks for its own run only")
            return self.bound_run
        if not named:
            raise ValidationError({"turnId": TURN_HELP})
        return named

    def session(self, named: str, field: str, *, refusal: str = "") -> str:
        """The session an operation acts on: an agent's own (naming another is 403), or `named`.

        `refusal` replaces the default message where an endpoint had its own.
        """
        if not self.is_agent:
            return named
        if named and js_trim(named) != self.bound_session:
            raise PermissionDenied(refusal or f"{field}: an agent key acts on its own session only")
        return self.bound_session


_NOBODY = Caller(name="anonymous")


def caller_of(request: Request) -> Caller:
    """The caller of a DRF request: its key's (kept by DRF as `request.user`), or its person's."""
    user: object = request.user  # typed as a Django user; for a key it is the Caller
    return user if isinstance(user, Caller) else Caller.for_person(user)


class ApiKeyAuthentication(BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[Caller, ApiKey] | None:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != self.keyword.lower():
            return None  # not ours: other authenticators (or none) decide
        token = token.strip()
        if not token:
            raise AuthenticationFailed(
                gettext("Authorization header has no API key after 'Bearer'")
            )
        key = api_key_for_token(token)
        if key is None:
            raise AuthenticationFailed(gettext("invalid API key"))
        if not key.is_active:
            raise AuthenticationFailed(gettext("API key has been revoked"))
        now = timezone.now()
        # The row just read says whether the last use is stale; only then is
        # there anything to write (D-K8), so most calls take no write lock.
        if last_used_is_stale(key.last_used_at, now):
            api_key_touch(key=key, now=now)
        caller = Caller.for_key(key)
        if caller.is_agent:
            # An agent key's session and run on the request's log lines (D-K27);
            # RequestIdMiddleware unbinds them when the request ends.
            logs.bind(session_key=caller.bound_session, run_id=caller.bound_run)
        return caller, key

    def authenticate_header(self, request: Request) -> str:
        # Present so DRF answers 401 (not 403) to calls without credentials.
        return 'Bearer realm="xworkmate"'


class DenyAll(BasePermission):
    """The default: a view that forgets to declare its permission serves nobody."""

    def has_permission(self, request: Request, view: Any) -> bool:
        return False


class HasScope(BasePermission):
    """Requires the key to carry `view.required_scope` (or its write twin)."""

    message: str | _StrPromise = gettext_lazy("API key lacks the required scope")

    def has_permission(self, request: Request, view: Any) -> bool:
        scope: str = view.required_scope
        caller = caller_of(request)
        if caller.key is None:
            return False
        if not caller.may(scope):
            self.message = gettext("API key lacks scope %(scope)s") % {"scope": scope}
            return False
        return True


class ApiKeyOrStaff(BasePermission):
    """Any valid API key, or a signed-in staff user (the schema and docs pages)."""

    def has_permission(self, request: Request, view: Any) -> bool:
        caller = caller_of(request)
        return caller.key is not None or caller.is_staff
