"""One request as handlers see it, and the wrapper that turns a handler into an endpoint.

A handler is a plain function ``(ctx) -> Reply`` run in a worker thread (the ledger's calls
block). The wrapper reads the body, negotiates the microversion, authenticates, stamps a
request id, and turns every refusal (:class:`HTTPError`, any ``LedgerError``) into
Placement's error document.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from uuid import uuid4

import orjson
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from allocation_ledger.application.ledger import Ledger
from allocation_ledger.domain.errors import LedgerError
from allocation_ledger.http import errors, microversion
from allocation_ledger.http.auth import Caller, Tokens
from allocation_ledger.http.microversion import Version

LOG = logging.getLogger(__name__)
REQUEST_ID = "x-openstack-request-id"
IDEMPOTENCY_KEY = "idempotency-key"
_REQUEST_ID = re.compile(r"^req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@dataclass(frozen=True)
class Reply:
    """What a handler answers: a status, a JSON body (``None``: empty) and headers."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Ctx:
    """One request: the ledger, the negotiated version, the caller and the inputs."""

    ledger: Ledger
    version: Version
    caller: Caller
    request_id: str
    params: Mapping[str, str]
    query: Mapping[str, str]
    raw: bytes
    idempotency_key: str | None

    def at_least(self, major: int, minor: int) -> bool:
        """True when the request's version is ``major.minor`` or later."""
        return self.version >= (major, minor)

    def json(self) -> Any:
        """The body as JSON; 400 when it is not."""
        try:
            return orjson.loads(self.raw)
        except orjson.JSONDecodeError as err:
            raise errors.HTTPError(400, f"Malformed JSON: {err}") from None

    sent: list[int] = field(default_factory=lambda: [0], compare=False)
    #: every ``(name, value)`` of the query string in order, repeated names included
    query_items: tuple[tuple[str, str], ...] = ()

    def meta(self) -> dict[str, str]:
        """The ``request`` mapping stored on every event this request writes: the caller's
        name as the actor and the request id."""
        return {"actor": self.caller.name, "request_id": self.request_id}

    def write(self) -> dict[str, Any]:
        """The keyword arguments of a command this request sends: ``request`` (see
        :meth:`meta`) and, with an ``Idempotency-Key`` header, the ledger's command id.

        The key is the id of the request's first command (``KEY#2``, ``KEY#3``... of the
        later ones, the same on every retry), so a retried request is answered with what
        the first one did and appends nothing, and a key sent again with another request
        is refused (``CommandIdReused``, 409).
        """
        args: dict[str, Any] = {"request": self.meta()}
        if self.idempotency_key is not None:
            self.sent[0] += 1
            n = self.sent[0]
            args["command_id"] = (self.idempotency_key if n == 1
                                  else f"{self.idempotency_key}#{n}")
        return args


Handler = Callable[[Ctx], Reply]


def endpoint(ledger: Ledger, tokens: Tokens, handler: Handler,
             since: Version = microversion.MIN, too_early: int = 404
             ) -> Callable[[Request], Any]:
    """A Starlette endpoint running ``handler`` for requests at version ``since`` or later
    (earlier ones get ``too_early``, as Placement's version-dispatched handlers answer)."""

    async def run(request: Request) -> Response:
        request_id = request_id_of(request.headers.get(REQUEST_ID))
        version = microversion.MIN
        try:
            caller = tokens.caller(request.headers.get("x-auth-token"), request.method)
            version = microversion.requested(request.headers.get(microversion.HEADER))
            if version < since:
                raise errors.HTTPError(too_early, f"{request.method} {request.url.path} is "
                                                  f"served from {microversion.text(since)}")
            ctx = Ctx(ledger, version, caller, request_id, dict(request.path_params),
                      dict(request.query_params), await request.body(),
                      request.headers.get(IDEMPOTENCY_KEY),
                      query_items=tuple(request.query_params.multi_items()))
            reply = await run_in_threadpool(_guarded, handler, ctx)
        except errors.HTTPError as err:
            reply = Reply(err.status, errors.body(err, request_id), err.headers)
        except Exception as err:  # a bug: answered as Placement does, logged with its id
            LOG.exception("request %s failed", request_id)
            failure = errors.HTTPError(500, f"{type(err).__name__}: {err}")
            reply = Reply(500, errors.body(failure, request_id))
        return respond(reply, version, request_id)

    return run


def _guarded(handler: Handler, ctx: Ctx) -> Reply:
    try:
        return handler(ctx)
    except LedgerError as err:
        raise errors.from_ledger(err) from err


def respond(reply: Reply, version: Version, request_id: str) -> Response:
    """The response with Placement's headers: version served, ``Vary``, request id."""
    headers = {
        microversion.HEADER: f"{microversion.SERVICE} {microversion.text(version)}",
        "vary": microversion.HEADER,
        REQUEST_ID: request_id,
        **reply.headers,
    }
    if reply.body is None:
        return Response(status_code=reply.status, headers=headers)
    return Response(orjson.dumps(reply.body), status_code=reply.status, headers=headers,
                    media_type="application/json")


def request_id_of(given: str | None) -> str:
    """The caller's request id when it is well formed (``req-<uuid>``), else a new one."""
    if given and _REQUEST_ID.match(given):
        return given
    return f"req-{uuid4()}"
