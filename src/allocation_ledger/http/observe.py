"""Watching the server: one access-log line and one latency observation per request (the
``GET /metrics`` route that serves them is ``http/metrics_route.py``).

:class:`Observed` wraps the whole application (a plain ASGI middleware, so 404s, 405s and
refusals of the body are seen as well as the routes' answers). Just before the last part
of the response goes out (its head, when the answer has no body: a 204, a 304, a HEAD or
``Content-Length: 0``; or when the request ends without one) it logs one INFO line on
``allocation_ledger.access`` (method, path, status, duration, request id, the caller's
name, the client's address; each also a field of the record, so a JSON log has them as
keys) and, when the server has metrics, observes the request's seconds by method, route
template and status: a client that has its answer finds its request counted.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.routing import compile_path

if TYPE_CHECKING:
    from allocation_ledger.metrics import RequestMetrics

ACCESS = logging.getLogger("allocation_ledger.access")
#: the route label of a path no route serves (never the path: one series per typo)
UNMATCHED = "unmatched"
#: where a request's scope carries its :class:`Note` (the endpoint fills it in)
NOTE = "allocation_ledger.note"
#: statuses whose answer is its head alone (RFC 9110: no content, not modified)
NO_BODY = frozenset({204, 304})
_UNPRINTABLE = re.compile(r"[^\x21-\x7e]")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass
class Note:
    """What only the endpoint learns about a request: who the caller is."""

    caller: str = "-"


def note(scope: Scope) -> Note:
    """The request's note (a fresh one when the request is not observed)."""
    found = scope.get(NOTE)
    return found if isinstance(found, Note) else Note()


class Templates:
    """A path's route template (``/resource_providers/{uuid}``): the metrics' label."""

    def __init__(self, templates: Iterable[str]) -> None:
        self._patterns = [(compile_path(t)[0], t) for t in dict.fromkeys(templates)]

    def of(self, path: str) -> str:
        """The template of the first route matching ``path``; :data:`UNMATCHED` if none."""
        return next((t for pattern, t in self._patterns if pattern.match(path)), UNMATCHED)


class Observed:
    """The ASGI middleware that logs and times every HTTP request (see the module)."""

    def __init__(self, app: ASGIApp, templates: Templates,
                 requests: RequestMetrics | None = None) -> None:
        self.app, self.templates, self.requests = app, templates, requests

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the request, noting the status and request id of its response."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        began = time.perf_counter()
        seen: dict[str, Any] = {"status": 500, "request_id": "-", "done": False}
        scope[NOTE] = Note()

        def done() -> None:
            if not seen["done"]:
                seen["done"] = True
                self._done(scope, seen["status"], seen["request_id"],
                           time.perf_counter() - began)

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                seen["status"] = message["status"]
                empty = False
                for name, value in message.get("headers", ()):
                    lowered = name.lower()
                    if lowered == b"x-openstack-request-id":
                        seen["request_id"] = value.decode("latin-1")
                    elif lowered == b"content-length":
                        empty = value.strip() == b"0"
                if empty or seen["status"] in NO_BODY or scope["method"] == "HEAD":
                    # the server writes the head at once, and for an answer with no body
                    # the head is the whole answer: the client has it before the (empty)
                    # body message goes out
                    done()
            elif not message.get("more_body", False):
                # counted and logged before the answer's end goes out: a client that has
                # its answer finds the request in the metrics, whichever worker it asks
                done()
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            done()

    def _done(self, scope: Scope, status: int, request_id: str, seconds: float) -> None:
        method = scope["method"]
        if self.requests is not None:
            self.requests.observed(method, self.templates.of(scope["path"]), status, seconds)
        path = printable(scope.get("raw_path") or scope["path"].encode())
        if scope.get("query_string"):
            path += "?" + printable(scope["query_string"])
        client = scope.get("client")
        fields = {"method": method, "path": path, "status": status,
                  "duration_ms": round(seconds * 1000, 3), "request_id": request_id,
                  "caller": note(scope).caller,
                  "client": f"{client[0]}:{client[1]}" if client else "-"}
        ACCESS.info("%(client)s %(method)s %(path)s %(status)s %(duration_ms).1fms "
                    "%(request_id)s %(caller)s", fields, extra=fields)


def printable(raw: bytes) -> str:
    """A path or query as sent, with anything that is not printable ASCII escaped (a log
    line stays one line whatever a client sends)."""
    text = raw.decode("latin-1")
    return _UNPRINTABLE.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
