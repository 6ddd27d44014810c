"""Who is asking, the way Placement is deployed: Keystone's ``auth_token`` middleware, or
Placement's ``noauth2`` for development and tests.

Both end where Placement's pipeline does: the request's identity headers (``X-User-Id``,
``X-Project-Id``, ``X-Roles``, ``X-Service-Roles``, ``OpenStack-System-Scope``...) read into
an ``oslo.context`` request context, which :mod:`allocation_ledger.http.policy` checks the
rules against; the caller's user is the events' actor and its project is stored beside it.

* :class:`Noauth2` is Placement's ``noauth2`` (``placement/auth.py``): a request without
  ``X-Auth-Token`` is refused (401); the token ``USER[:PROJECT]`` names the user and, unless
  the request is system scoped, the project; the roles are those of ``X-Roles``, else
  ``admin`` for the user ``admin``, else none. It trusts the caller's headers, so the server
  allows it on a loopback address only.
* :class:`KeystoneAuth` runs ``keystonemiddleware.auth_token`` itself (a WSGI middleware)
  on each request's headers: it strips any identity headers the caller sent, validates the
  token with Keystone and sets the headers of the token's user, project and roles; what it
  refuses (401) is refused here with its ``WWW-Authenticate``. Its options are those of
  Placement's ``[keystone_authtoken]`` section (or a paste ``[filter:authtoken]`` one).

The root (``GET /``, the version document) needs no token, as in Placement.
"""

from __future__ import annotations

import configparser
import logging
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from oslo_context.context import RequestContext
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from allocation_ledger.domain.errors import InvalidRequest
from allocation_ledger.http.auth import Caller
from allocation_ledger.http.errors import HTTPError

LOG = logging.getLogger(__name__)
UNAUTHORIZED = "The request you have made requires authentication."
ROOT = ("/", "")


@dataclass(frozen=True)
class KeystoneCaller(Caller):
    """A caller known by its token: the user (``name``, the actor), the project and the
    request context the policy is checked against."""

    project: str | None = None
    context: RequestContext | None = field(default=None, compare=False, repr=False)


NOBODY = KeystoneCaller("anonymous", "none")


def caller_of(environ: Mapping[str, Any]) -> KeystoneCaller:
    """The caller an environment's identity headers name (Placement's
    ``PlacementKeystoneContext``): 401 without a user."""
    context = RequestContext.from_environ(dict(environ))
    if context.user_id is None:
        raise HTTPError(401, UNAUTHORIZED)
    role = "admin" if "admin" in context.roles else "reader"
    return KeystoneCaller(context.user_id, role, context.project_id, context)


def environ_of(request: Request) -> dict[str, Any]:
    """A WSGI environment of the request's method, path and headers (no body)."""
    environ: dict[str, Any] = {
        "REQUEST_METHOD": request.method, "PATH_INFO": request.url.path,
        "QUERY_STRING": request.url.query, "SCRIPT_NAME": "",
        "SERVER_NAME": request.url.hostname or "localhost",
        "SERVER_PORT": str(request.url.port or 80), "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": request.url.scheme, "wsgi.input": None, "wsgi.errors": sys.stderr,
        "wsgi.version": (1, 0), "wsgi.multithread": True, "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    for name, value in request.headers.items():
        key = name.upper().replace("-", "_")
        if key not in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            key = "HTTP_" + key
        environ[key] = value
    return environ


class Noauth2:
    """Placement's ``noauth2``: the token names the user (and project), ``X-Roles`` the
    roles."""

    async def identify(self, request: Request) -> Caller:
        """The caller (401 without a token), or nobody at the root."""
        if request.url.path in ROOT:
            return NOBODY
        environ = environ_of(request)
        token = environ.get("HTTP_X_AUTH_TOKEN")
        if token is None:
            raise HTTPError(401, UNAUTHORIZED)
        user, _, project = token.partition(":")
        if "HTTP_X_ROLES" in environ:
            roles = environ["HTTP_X_ROLES"].split(",")
        else:
            roles = ["admin"] if user == "admin" else []
        environ["HTTP_X_USER_ID"] = user
        if not environ.get("HTTP_OPENSTACK_SYSTEM_SCOPE"):
            environ["HTTP_X_TENANT_ID"] = project or user
        environ["HTTP_X_ROLES"] = ",".join(roles)
        return caller_of(environ)


StartResponse = Callable[..., Any]


class KeystoneAuth:
    """``keystonemiddleware.auth_token`` with ``options`` (its option names and values, as
    in ``[keystone_authtoken]``)."""

    def __init__(self, options: Mapping[str, str]) -> None:
        from keystonemiddleware import auth_token

        self.middleware = auth_token.AuthProtocol(_passed, dict(options))

    @classmethod
    def from_file(cls, path: str) -> KeystoneAuth:
        """Options from an ini file's ``[keystone_authtoken]`` section, or a paste
        deployment file's ``[filter:authtoken]`` (its ``paste.filter_factory`` dropped)."""
        parser = configparser.ConfigParser(interpolation=None)
        if not parser.read(path):
            raise InvalidRequest(f"--auth-config {path} cannot be read")
        for section in ("filter:authtoken", "keystone_authtoken"):
            if parser.has_section(section):
                options = {k: v for k, v in parser.items(section)
                           if k not in ("paste.filter_factory", "use")}
                return cls(options)
        raise InvalidRequest(f"{path} has neither [keystone_authtoken] nor "
                             "[filter:authtoken]")

    async def identify(self, request: Request) -> Caller:
        """The token's caller (its validation may ask Keystone: in a worker thread)."""
        if request.url.path in ROOT:
            return NOBODY
        return await run_in_threadpool(self._identify, environ_of(request))

    def _identify(self, environ: dict[str, Any]) -> Caller:
        answer: dict[str, Any] = {}

        def start_response(status: str, headers: list[tuple[str, str]],
                           exc_info: object = None) -> None:
            answer.update(status=status, headers=headers)

        try:
            body: Iterable[bytes] = self.middleware(environ, start_response)
            b"".join(body)
        except Exception as err:  # Keystone unreachable or misconfigured: not the caller's
            LOG.exception("token validation failed")
            raise HTTPError(503, f"Keystone could not validate the token: "
                                 f"{type(err).__name__}") from err
        if not environ.get(_PASSED):
            status = int(str(answer.get("status", "401")).split()[0])
            headers = {k.lower(): v for k, v in answer.get("headers", [])
                       if k.lower() == "www-authenticate"}
            raise HTTPError(401 if status == 401 else 503,
                            UNAUTHORIZED if status == 401 else "authentication failed",
                            headers=headers)
        return caller_of(environ)


_PASSED = "allocation_ledger.authenticated"


def _passed(environ: dict[str, Any], start_response: StartResponse) -> list[bytes]:
    """The application behind the middleware: marks the request as let through."""
    environ[_PASSED] = True
    start_response("204 No Content", [])
    return []
