"""A small TCP proxy between the ledger and PostgreSQL that loses replies on purpose.

It forwards the PostgreSQL wire protocol both ways (refusing TLS, so it can read it) and
recognises the ledger's append (a statement calling the ``..._append`` function). When
armed, it lets the next append reach the server, waits until the server has committed it
(ReadyForQuery), and then closes the client's connection without passing the reply on: the
commit happened, the caller never heard. ``swallow`` instead closes before the append reaches
the server (nothing committed); ``down`` refuses every connection until ``up``.
"""

from __future__ import annotations

import socket
import struct
import threading
from contextlib import suppress

SSL_REQUEST, GSS_REQUEST = 80877103, 80877104
#: how the ledger's append statement calls its function ("<schema>"."<table>_append"(...))
_APPEND = b'_append"('


def _read(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def _message(sock: socket.socket) -> tuple[bytes, bytes]:
    """One typed message: its type byte and the whole message as sent."""
    head = _read(sock, 5)
    length = struct.unpack("!I", head[1:])[0]
    return head[:1], head + _read(sock, length - 4)


class LossyProxy:
    """Forwards 127.0.0.1:``port`` to ``target``; see the module."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._lose_replies = 0
        self._swallow = 0
        self.down = False
        #: replies lost after the server committed, and appends swallowed before it
        self.lost = 0
        self.swallowed = 0
        self._closed = False
        self._open: set[socket.socket] = set()
        threading.Thread(target=self._accept, daemon=True).start()

    def go_down(self) -> None:
        """Cut every connection and refuse new ones, until :meth:`come_up`."""
        self.down = True
        with self._lock:
            cut, self._open = self._open, set()
        for sock in cut:
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def come_up(self) -> None:
        """Accept connections again."""
        self.down = False

    def lose_next_reply(self, count: int = 1) -> None:
        """Let the next ``count`` appends commit and lose their replies."""
        with self._lock:
            self._lose_replies += count

    def swallow_next(self, count: int = 1) -> None:
        """Drop the next ``count`` appends before they reach the server."""
        with self._lock:
            self._swallow += count

    def close(self) -> None:
        """Stop listening."""
        self._closed = True
        with suppress(OSError):
            self._listener.close()

    def _take(self, what: str) -> bool:
        with self._lock:
            left = getattr(self, what)
            if left:
                setattr(self, what, left - 1)
            return bool(left)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self.down:
                client.close()
                continue
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            server = socket.create_connection(self._target)
        except OSError:
            client.close()
            return
        for sock in (client, server):  # pass each message on at once (no Nagle delay)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._lock:
            self._open.update((client, server))
        lose = threading.Event()
        threading.Thread(target=self._replies, args=(server, client, lose), daemon=True).start()
        try:
            self._requests(client, server, lose)
        except (ConnectionError, OSError):
            pass
        finally:
            for sock in (client, server):
                with suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            with self._lock:
                self._open.difference_update((client, server))

    def _requests(self, client: socket.socket, server: socket.socket,
                  lose: threading.Event) -> None:
        while True:  # the startup packet (no type byte); refuse TLS and GSS encryption
            length = struct.unpack("!I", _read(client, 4))[0]
            body = _read(client, length - 4)
            if struct.unpack("!I", body[:4])[0] in (SSL_REQUEST, GSS_REQUEST):
                client.sendall(b"N")
                continue
            server.sendall(struct.pack("!I", length) + body)
            break
        appends: set[bytes] = set()
        while True:
            kind, message = _message(client)
            body = message[5:]
            is_append = False
            if kind == b"P":
                name, query = body.split(b"\0")[:2]
                if _APPEND in query:
                    appends.add(name)
                else:
                    appends.discard(name)
            elif kind == b"B":
                is_append = body.split(b"\0")[1] in appends
            elif kind == b"Q":
                is_append = _APPEND in body
            if is_append and self._take("_swallow"):
                self.swallowed += 1
                raise ConnectionError("swallowed")
            if is_append and self._take("_lose_replies"):
                lose.set()
            server.sendall(message)

    def _replies(self, server: socket.socket, client: socket.socket,
                 lose: threading.Event) -> None:
        try:
            while True:
                kind, message = _message(server)
                if lose.is_set():
                    if kind == b"Z":  # the server committed and is ready: lose the reply
                        self.lost += 1
                        break
                    continue
                client.sendall(message)
        except (ConnectionError, OSError):
            pass
        for sock in (client, server):
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
