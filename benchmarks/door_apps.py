"""The trivial servers ``benchmarks/door.py`` measures ``serve`` beside, each under uvicorn
as ``serve`` runs it (uvloop where installed, httptools, no access log), one per process:

    python -m benchmarks.door_apps {bare|route|thread} PORT

- ``bare``: a plain ASGI app that reads the request's body and answers 204;
- ``route``: a Starlette app with the one route ``PUT /allocations/{consumer_uuid}`` that
  reads the body and answers 204;
- ``thread``: the same route, parsing the body as JSON in a worker thread
  (``run_in_threadpool``, as ``serve``'s endpoints run their handlers) before it answers.
"""

from __future__ import annotations

import sys
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

APPS = ("bare", "route", "thread")


async def bare(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """204 to every request, once its body is read."""
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})


def routed(hop: bool) -> Starlette:
    """The one-route Starlette app; ``hop``: parse the body in a worker thread."""
    async def put(request: Request) -> Response:
        body = await request.body()
        if hop:
            await run_in_threadpool(orjson.loads, body)
        return Response(status_code=204)

    return Starlette(routes=[Route("/allocations/{consumer_uuid}", put, methods=["PUT"])])


def main(argv: list[str]) -> int:
    """Serve app ``argv[0]`` on 127.0.0.1:``argv[1]`` until stopped."""
    import uvicorn

    kind, port = argv[0], int(argv[1])
    if kind not in APPS:
        raise SystemExit(f"app is one of {', '.join(APPS)}, not {kind!r}")
    app: Any = bare if kind == "bare" else routed(hop=kind == "thread")
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False,
                http="httptools")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
