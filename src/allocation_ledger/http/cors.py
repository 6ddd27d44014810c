"""Cross-origin requests as Placement answers them with ``[cors] allowed_origin`` set
(``oslo.middleware``'s CORS middleware, whose rules this follows; it is a WSGI middleware
and the server is ASGI, hence this small copy).

Off unless ``serve --cors-allowed-origin`` names an origin. Then every ``OPTIONS`` request
is answered 200 without a body (a preflight); it carries the allowing headers only when its
``Origin`` is allowed (or ``*`` is), its ``Access-Control-Request-Method`` is allowed and
every header of ``Access-Control-Request-Headers`` is allowed or simple. Any other request
from an allowed origin is answered as usual plus ``Access-Control-Allow-Origin``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# oslo.middleware's defaults
METHODS = ("OPTIONS", "GET", "HEAD", "POST", "PUT", "DELETE", "TRACE", "PATCH")
SIMPLE_HEADERS = ("Cache-Control", "Content-Language", "Content-Type", "Expires",
                  "Last-Modified", "Pragma")
MAX_AGE = 3600


@dataclass(frozen=True)
class CorsSettings:
    """Placement's ``[cors]`` options that the server takes (the others keep
    oslo.middleware's defaults: credentials allowed, no exposed headers, max age 3600)."""

    allowed_origins: tuple[str, ...]
    allow_headers: tuple[str, ...] = ()


def _split(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


class Cors:
    """The ASGI middleware."""

    def __init__(self, app: ASGIApp, settings: CorsSettings) -> None:
        self.app = app
        self.settings = settings
        self.permitted = {h.upper() for h in (*settings.allow_headers, *SIMPLE_HEADERS)}

    def _origin(self, headers: Headers) -> str | None:
        origin = headers.get("origin")
        if origin is None:
            return None
        if origin in self.settings.allowed_origins:
            return origin
        return "*" if "*" in self.settings.allowed_origins else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if scope["method"] == "OPTIONS":
            await self._preflight(headers, send)
            return
        origin = self._origin(headers)

        async def decorated(message: Message) -> None:
            if message["type"] == "http.response.start" and origin is not None:
                out = MutableHeaders(scope=message)
                if "access-control-allow-origin" not in out:
                    out["vary"] = f"{out['vary']},Origin" if "vary" in out else "Origin"
                    out["access-control-allow-origin"] = origin
                    out["access-control-allow-credentials"] = "true"
            await send(message)

        await self.app(scope, receive, decorated)

    def _allowing(self, headers: Headers) -> list[tuple[str, str]]:
        origin = self._origin(headers)
        method = headers.get("access-control-request-method")
        if origin is None or method is None or method not in METHODS:
            return []
        requested = _split(headers.get("access-control-request-headers"))
        if any(h.upper() not in self.permitted for h in requested):
            return []
        found = [("vary", "Origin"), ("access-control-allow-origin", origin),
                 ("access-control-allow-credentials", "true"),
                 ("access-control-max-age", str(MAX_AGE)),
                 ("access-control-allow-methods", method)]
        if requested:
            found.append(("access-control-allow-headers", ",".join(requested)))
        return found

    async def _preflight(self, headers: Headers, send: Send) -> None:
        raw = [(k.encode(), v.encode()) for k, v in
               [("content-length", "0"), *self._allowing(headers)]]
        await send({"type": "http.response.start", "status": 200, "headers": raw})
        await send({"type": "http.response.body", "body": b""})


def settings_of(origins: Sequence[str], allow_headers: Sequence[str]) -> CorsSettings | None:
    """The settings for ``serve``'s options; ``None`` (CORS off) without an origin."""
    if not origins:
        return None
    return CorsSettings(tuple(origins), tuple(allow_headers))
