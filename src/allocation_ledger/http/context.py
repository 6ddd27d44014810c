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
from dataclasses import dataclass, field, replace
from email.utils import formatdate
from typing import Any
from uuid import uuid4

import orjson
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from allocation_ledger.application.ledger import Ledger
from allocation_ledger.application.retries import as_before
from allocation_ledger.domain.errors import LedgerError
from allocation_ledger.http import error_pages, errors, microversion
from allocation_ledger.http.auth import Caller, Guard
from allocation_ledger.http.limits import MAX_BODY, read_body
from allocation_ledger.http.microversion import Version
from allocation_ledger.http.negotiation import check_accept, check_content_type, media_type
from allocation_ledger.http.observe import note

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


@dataclass
class Ctx:
    """One request: the ledger, the negotiated version, the caller and the inputs, and how
    many commands the request has sent so far (each one's id follows from that count)."""

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
        """The body as JSON; 415 when it is not sent as JSON, 400 when it is not JSON."""
        check_content_type(self.content_type)
        try:
            return orjson.loads(self.raw)
        except orjson.JSONDecodeError as err:
            raise errors.HTTPError(400, f"Malformed JSON: {err}") from None

    #: the commands this request has sent (see :meth:`write`)
    commands_sent: int = 0
    #: the media type of the body (``Content-Type`` without parameters; ``None``: not sent)
    content_type: str | None = None
    method: str = "GET"
    #: every value of each query parameter, in order (``query`` keeps the last one)
    query_lists: Mapping[str, list[str]] = field(default_factory=dict, compare=False)
    #: every ``(name, value)`` of the query string in order, repeated names included
    query_items: tuple[tuple[str, str], ...] = ()

    def meta(self) -> dict[str, str]:
        """The ``request`` mapping stored on every event this request writes: the caller's
        name as the actor (and its project, when its token names one) and the request
        id."""
        meta = {"actor": self.caller.name, "request_id": self.request_id}
        project = getattr(self.caller, "project", None)
        if project is not None:
            meta["project"] = project
        return meta

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
            self.commands_sent += 1
            n = self.commands_sent
            args["command_id"] = (self.idempotency_key if n == 1
                                  else f"{self.idempotency_key}#{n}")
        return args


#: the status logged for a request whose client left before its end (nginx's 499)
CLIENT_GONE = 499

#: What answers one route: the request (its context) in, the reply out.
Responder = Callable[[Ctx], Reply]


def endpoint(ledger: Ledger, tokens: Guard, handler: Responder,
             since: Version = microversion.MIN, too_early: int = 404,
             max_body: int = MAX_BODY, takes_body: bool = False) -> Callable[[Request], Any]:
    """A Starlette endpoint running ``handler`` for requests at version ``since`` or later
    (earlier ones get ``too_early``, as Placement's version-dispatched handlers answer).
    A body is read only from an authenticated caller, and at most ``max_body`` bytes of it
    (413 beyond); a handler that ``takes_body`` refuses one not sent as JSON (415) before
    it runs, as Placement's ``require_content`` does."""

    async def run(request: Request) -> Response:
        request_id = request_id_of(request.headers.get(REQUEST_ID))
        version = microversion.MIN
        try:
            caller = await tokens.identify(request)
            note(request.scope).caller = caller.name  # for the access log
            version = microversion.requested(request.headers.get(microversion.HEADER))
            if version < since:
                raise errors.HTTPError(too_early, f"{request.method} {request.url.path} is "
                                                  f"served from {microversion.text(since)}")
            if request.method in ("GET", "HEAD"):
                check_accept(request.headers.get("accept"))
            content_type = media_type(request.headers.get("content-type"))
            raw = await read_body(request, max_body)
            if raw and content_type is None:  # Placement's middleware says so first
                raise errors.HTTPError(400, "content-type header required")
            if raw or takes_body:
                check_content_type(content_type)
            ctx = Ctx(ledger, version, caller, request_id, dict(request.path_params),
                      dict(request.query_params), raw,
                      request.headers.get(IDEMPOTENCY_KEY), content_type=content_type,
                      method=request.method,
                      query_lists={k: request.query_params.getlist(k)
                                   for k in request.query_params},
                      query_items=tuple(request.query_params.multi_items()))
            reply = await run_in_threadpool(_guarded, handler, ctx)
            location = reply.headers.get("location", "")
            if location.startswith("/"):  # absolute, as webob makes Placement's
                reply.headers["location"] = str(request.base_url).rstrip("/") + location
        except errors.HTTPError as err:
            reply = Reply(err.status, errors.body(err, request_id), err.headers)
        except ClientDisconnect:  # nobody to answer: logged as nginx logs it, not a failure
            LOG.info("request %s: the client went away before its body was read", request_id)
            reply = Reply(CLIENT_GONE, None)  # nobody reads it: no body
        except Exception as err:  # a bug: answered as Placement does, logged with its id
            LOG.exception("request %s failed", request_id)
            failure = errors.HTTPError(500, f"{type(err).__name__}: {err}")
            reply = Reply(500, errors.body(failure, request_id))
        return respond(reply, version, request_id, request.method,
                       request.headers.get("accept"))

    return run


def _guarded(handler: Responder, ctx: Ctx) -> Reply:
    try:
        if ctx.idempotency_key is not None and ctx.method not in ("GET", "HEAD"):
            # A retry of a request that was applied is decided again on the ledger as it
            # was before the first run, so it sends the same command and gets the
            # record's answer (application/retries.py): the one place a retry is known.
            ctx = replace(ctx, ledger=as_before(ctx.ledger, ctx.idempotency_key))
        return handler(ctx)
    except LedgerError as err:
        raise errors.from_ledger(err) from err


def respond(reply: Reply, version: Version, request_id: str, method: str = "",
            accept: str | None = None) -> Response:
    """The response with Placement's headers: version served, ``Vary``, request id; from
    1.15 an answer that shows a resource (a read, or a write that answers with the
    resource) also says ``cache-control: no-cache`` and ``last-modified`` (the time of
    the answer: the ledger does not keep a modification time per resource; Placement too
    answers the current time for usages and for resources without one). An error goes to
    a client that does not take JSON (``accept``) as a page or text
    (:mod:`.error_pages`)."""
    headers = {
        microversion.HEADER: f"{microversion.SERVICE} {microversion.text(version)}",
        "vary": microversion.HEADER,
        REQUEST_ID: request_id,
        **reply.headers,
    }
    if (method in ("GET", "PUT", "POST") and reply.status in (200, 201)
            and reply.body is not None and version >= (1, 15)):
        headers.setdefault("cache-control", "no-cache")
        headers.setdefault("last-modified", formatdate(usegmt=True))
    if reply.body is None:
        return Response(status_code=reply.status, headers=headers)
    if reply.status >= 400 and isinstance(reply.body, dict) and "errors" in reply.body:
        media_type = error_pages.chosen(accept)
        if media_type != error_pages.JSON:
            detail = str(reply.body["errors"][0]["detail"])
            return Response(error_pages.render(reply.status, detail, media_type),
                            status_code=reply.status, headers=headers,
                            media_type=media_type)
    return Response(orjson.dumps(reply.body), status_code=reply.status, headers=headers,
                    media_type="application/json")


def request_id_of(given: str | None) -> str:
    """The caller's request id when it is well formed (``req-<uuid>``), else a new one."""
    if given and _REQUEST_ID.match(given):
        return given
    return f"req-{uuid4()}"
