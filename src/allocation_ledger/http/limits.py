"""The server's limits on what a request may send, answered rather than dropped.

- A request's head (request line and headers) may hold at most :data:`MAX_HEAD` bytes.
  httptools (uvicorn's C parser) sets no limit of its own, and a bare 400 with the
  connection closed at once would reset a client still sending its long URL or headers.
  :class:`LimitedHttpToolsProtocol` answers 414 (the request line alone is too long) or
  431 (the headers are) in Placement's error document, then reads and drops what the
  client still sends for a moment before closing, so the answer reaches it.
- A request's body may hold at most ``max_body`` bytes (:data:`MAX_BODY` unless the server
  is told otherwise): beyond it, 413, read no further (:func:`read_body`, called only after
  the caller is authenticated). An answer given before the body was read closes the
  connection the same way, after lingering.
"""

from __future__ import annotations

import asyncio
from http import HTTPStatus
from typing import Any

import orjson
from starlette.requests import Request
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

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


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol answering an oversized head with 414 or 431, and
    closing (after lingering) a connection whose request was answered before its body was
    read (401, 413): keeping it would mean reading a body nobody wants, and closing at once
    would reset a client still sending, which then never reads the answer. Such an answer
    says ``connection: close``.

    A head's size is counted from below, so a head within :data:`MAX_HEAD` is never
    refused: its request line and each header as the parser hands them over (with the
    least framing they can have), and every read that begins and ends inside the head.
    The read a head ends in is not counted whole, so a head may overrun the limit by at most
    one read (256 KiB) before it is refused. Whether the request line ended (414 or 431): a
    header was parsed, or a read inside the head held a line break.

    Not handled here, as in uvicorn's own protocol: an oversized head pipelined behind
    requests still being answered is refused at once (its 431 may go out before their
    answers), and a chunked body's trailer fields are not counted."""

    _lingering = False
    _keep_alive = False  # whether the request being read may keep the connection
    _in_head = False  # a request's head has begun and not ended
    _head_bytes = 0
    _line_ended = False  # the head's request line has ended

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._raw = transport
        self.transport = _LingeringTransport(self, transport)  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self._lingering:  # the answer is sent: drop the rest of the request
            return
        inside = self._in_head  # the read begins inside a head
        super().data_received(data)
        if not self._in_head or self.transport.is_closing():
            return
        if b"\n" in data:
            self._line_ended = True
        if inside:  # begins and ends inside the head: all of it is head
            self._head_bytes += len(data)
        self._check_head()

    def send_400_response(self, msg: str) -> None:
        if not self._lingering:  # the refusal of the head was the answer
            super().send_400_response(msg)

    def on_message_begin(self) -> None:
        if self._lingering:
            return
        super().on_message_begin()
        self._in_head, self._head_bytes, self._line_ended = True, 0, False

    def on_url(self, url: bytes) -> None:
        if self._lingering:
            return
        super().on_url(url)
        self._head_bytes += len(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._lingering:
            return
        super().on_header(name, value)
        self._line_ended = True
        self._head_bytes += len(name) + len(value) + 3  # at least ":" and CRLF

    def on_headers_complete(self) -> None:
        if self._lingering:
            return
        self._in_head = False
        if self._check_head():  # refused: the application never sees the request
            return
        super().on_headers_complete()
        # An answer given before the request's end was read says ``connection: close``:
        # the connection is kept alive only once the whole request is in.
        self._keep_alive, self.cycle.keep_alive = self.cycle.keep_alive, False

    def on_body(self, body: bytes) -> None:
        if not self._lingering:
            super().on_body(body)

    def on_message_complete(self) -> None:
        if self._lingering:
            return
        super().on_message_complete()
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.keep_alive = self._keep_alive

    def shutdown(self) -> None:
        self._keep_alive = False  # a request still coming in is the connection's last
        super().shutdown()

    def _check_head(self) -> bool:
        """Refuse the head (414 or 431) if it is over :data:`MAX_HEAD`; True if refused."""
        if self._head_bytes <= MAX_HEAD:
            return False
        self._refuse_head(431 if self._line_ended else 414)
        return True

    def on_response_complete(self) -> None:
        if self.body_unread():  # answered before the body was read: no next request
            self.server_state.total_requests += 1  # as uvicorn counts an answered request
            self.transport.close()
            return
        super().on_response_complete()

    def handle_websocket_upgrade(self) -> None:
        if not self._lingering:  # a refused head is never upgraded
            super().handle_websocket_upgrade()

    def body_unread(self) -> bool:
        """Whether the request last answered still has a body on the way (the newest
        request parsed, pipelined behind it, may still be waiting for its answer)."""
        cycle = self.cycle
        return bool(cycle is not None and cycle.response_complete and cycle.more_body)

    def linger(self) -> None:
        """Drop what still comes for :data:`LINGER_SECONDS`, then close the connection."""
        if not self._lingering:
            self._lingering = True
            self._raw.resume_reading()  # reads may be paused on the unread body
            self.loop.call_later(LINGER_SECONDS, self._raw.close)

    def _refuse_head(self, status: int) -> None:
        detail = ("The request line is too long." if status == 414
                  else "The request's header fields are too large.")
        body = orjson.dumps(errors.body(errors.HTTPError(status, f"{detail} At most "
                                                         f"{MAX_HEAD} bytes of request line "
                                                         "and headers are read."), "-"))
        self.transport.write(b"".join((
            f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n".encode(),
            b"content-type: application/json\r\nconnection: close\r\n",
            b"content-length: %d\r\n\r\n" % len(body), body)))
        self.linger()


class _LingeringTransport:
    """The connection's transport, closed only after lingering when the request it answers
    still has a body on the way (and then by the lingering's end alone)."""

    def __init__(self, protocol: LimitedHttpToolsProtocol, transport: Any) -> None:
        self._protocol = protocol
        self._transport = transport

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    def is_closing(self) -> bool:
        return bool(self._protocol._lingering or self._transport.is_closing())

    def close(self) -> None:
        if self._protocol._lingering:
            return
        if self._protocol.body_unread():
            self._protocol.linger()
        else:
            self._transport.close()
