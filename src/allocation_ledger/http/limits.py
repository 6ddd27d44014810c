"""The server's limits on what a request may send, answered rather than dropped.

- A request's head (request line and headers) may hold at most :data:`MAX_HEAD` bytes.
  Beyond it h11 refuses the request; uvicorn would answer a bare 400 and close the
  connection at once, so a client still sending its long URL or headers sees its
  connection reset instead of an answer. :class:`LimitedH11Protocol` answers 414 (the
  request line alone is too long) or 431 (the headers are) in Placement's error document,
  then reads and drops what the client still sends for a moment before closing, so the
  answer reaches it.
- A request's body may hold at most ``max_body`` bytes (:data:`MAX_BODY` unless the server
  is told otherwise): beyond it, 413, read no further (:func:`read_body`, called only after
  the caller is authenticated).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import h11
import orjson
from starlette.requests import Request
from uvicorn.protocols.http.h11_impl import H11Protocol

from allocation_ledger.http import errors

MAX_HEAD = 64 * 1024
MAX_BODY = 1024 * 1024
#: how long a connection refused for its head still reads (and drops) what comes
LINGER_SECONDS = 2.0


async def read_body(request: Request, max_body: int) -> bytes:
    """The request's body, or 413 as soon as it is known to exceed ``max_body`` bytes
    (from ``Content-Length``, else while it streams in)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_body:
        raise _too_large(max_body, f"{declared} declared")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_body:
            raise _too_large(max_body, f"more than {max_body} sent")
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(max_body: int, seen: str) -> errors.HTTPError:
    return errors.HTTPError(413, f"The request body is larger than this server accepts "
                                 f"({max_body} bytes; {seen}).")


class LimitedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol answering an oversized head with 414 or 431, and lingering
    after an answer given before the request's body was read (401, 413): closing at once
    would reset a client still sending, which then never reads the answer."""

    _lingering = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.transport = _LingeringTransport(self, self.transport)  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self._lingering:  # the answer is sent: drop the rest of the request
            return
        super().data_received(data)

    def linger(self, close: Callable[[], None]) -> None:
        """Drop what still comes for :data:`LINGER_SECONDS`, then ``close``."""
        if not self._lingering:
            self._lingering = True
            self.loop.call_later(LINGER_SECONDS, close)

    def send_400_response(self, msg: str) -> None:
        buffered, _ = self.conn.trailing_data
        if len(buffered) <= self.conn._max_incomplete_event_size:
            super().send_400_response(msg)  # malformed, not oversized
            return
        status = 414 if b"\r\n" not in buffered else 431  # no end of the request line yet
        detail = ("The request line is too long." if status == 414
                  else "The request's header fields are too large.")
        body = orjson.dumps(errors.body(errors.HTTPError(status, f"{detail} At most "
                                                         f"{MAX_HEAD} bytes of request line "
                                                         "and headers are read."), "-"))
        headers = [(b"content-type", b"application/json"), (b"connection", b"close"),
                   (b"content-length", str(len(body)).encode())]
        for event in (h11.Response(status_code=status, headers=headers,
                                   reason=HTTPStatus(status).phrase.encode()),
                      h11.Data(data=body), h11.EndOfMessage()):
            self.transport.write(self.conn.send(event))
        self.linger(self.transport.close)


class _LingeringTransport:
    """The connection's transport, closed only after lingering when the request it answers
    still has a body on the way."""

    def __init__(self, protocol: LimitedH11Protocol, transport: Any) -> None:
        self._protocol = protocol
        self._transport = transport

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    def is_closing(self) -> bool:
        return bool(self._protocol._lingering or self._transport.is_closing())

    def close(self) -> None:
        if self._protocol._lingering or self._protocol.conn.their_state is not h11.SEND_BODY:
            self._transport.close()
            return
        self._transport.resume_reading()  # reads may be paused on the unread body
        self._protocol.linger(self._transport.close)
