"""``GET /metrics``: the server's registry (``allocation_ledger.metrics``) in Prometheus'
text format.

A reader's route: with a token file it needs a known token of any role (``X-Auth-Token``,
or ``Authorization: Bearer``, which is what Prometheus' scrape ``authorization`` sends);
without one (loopback only) anyone may read it, as every route. The gauges are read from
the store in a worker thread; a store that cannot be read is a 503 error document, so the
scrape fails and says why.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import orjson
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from allocation_ledger.domain.errors import LedgerError
from allocation_ledger.http import errors
from allocation_ledger.http.auth import Guard, Tokens
from allocation_ledger.http.context import REQUEST_ID, request_id_of
from allocation_ledger.http.observe import note

LOG = logging.getLogger(__name__)
PATH = "/metrics"
#: the classic text format, which ``generate_latest`` writes and every Prometheus reads
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def metrics_endpoint(tokens: Guard, exposition: Callable[[], bytes]
                     ) -> Callable[[Request], Awaitable[Response]]:
    """``GET /metrics``: the registry in Prometheus' text format, for any known caller."""
    async def metrics(request: Request) -> Response:
        request_id = request_id_of(request.headers.get(REQUEST_ID))
        headers = {REQUEST_ID: request_id}
        try:
            caller = (tokens.caller(token_of(request), "GET") if isinstance(tokens, Tokens)
                      else await tokens.identify(request))
            note(request.scope).caller = caller.name
            text = await run_in_threadpool(_read, exposition)
        except errors.HTTPError as err:
            return Response(orjson.dumps(errors.body(err, request_id)), err.status,
                            {**headers, **err.headers}, media_type="application/json")
        return Response(text, 200, headers, media_type=CONTENT_TYPE)

    return metrics


def token_of(request: Request) -> str | None:
    """The caller's token: ``X-Auth-Token``, else an ``Authorization: Bearer`` one."""
    token = request.headers.get("x-auth-token")
    if token is not None:
        return token
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def _read(exposition: Callable[[], bytes]) -> bytes:
    """The exposition; a store that cannot be read is a 503 (the scrape fails, and says
    why), never a 500."""
    try:
        return exposition()
    except LedgerError as err:
        raise errors.from_ledger(err) from err
    except Exception as err:
        LOG.exception("reading the metrics failed")
        raise errors.HTTPError(503, f"the metrics could not be read: "
                                    f"{type(err).__name__}: {err}") from err
