"""The store's PostgreSQL connections, handed out most-recently-returned first.

psycopg_pool hands out the connection returned longest ago and has no option for the most
recent. A writer thread takes one connection per claim (its turn's transaction, or the
append), so with three connections in the pool each claim woke a backend that had slept
through the two claims before: single claims ran at 0.55-0.65 times the rate (5% more
client CPU: the time is the server's). Here the connection returned last goes out first
(the SQLAlchemy pool's ``pool_use_lifo``; Rails and node-postgres do the same), so one
thread stays on one warm backend. The spares a burst opened sink to the bottom of the
stack, and one idle for ``max_idle`` seconds is closed there, before a server's or a
proxy's idle limit can close it under the pool. A connection is opened when none is idle
and fewer than ``max_size`` are out; one closed, broken, left in a transaction that cannot
be rolled back, or older than ``max_lifetime`` is not taken back. A connection is opened
by the caller that needs it, within the pool's ``timeout`` (libpq's ``connect_timeout``):
a store that is away fails the call at once, for the library's retry.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus


class RecentFirstPool:
    """What the library's datastore asks of its pool (``open``, ``connection``,
    ``close``), on psycopg's public ``Connection``."""

    def __init__(self, conninfo: str, *, kwargs: dict[str, Any],
                 configure: Callable[[psycopg.Connection[Any]], None], max_size: int,
                 timeout: float, max_lifetime: float, max_idle: float = 60.0,
                 password: Callable[[], str] | None = None) -> None:
        # a new connection is bounded as a wait for one is (libpq counts whole seconds)
        self.kwargs = {"connect_timeout": max(1, math.ceil(timeout)), **kwargs}
        self.conninfo, self.configure = conninfo, configure
        self.max_size, self.timeout = max_size, timeout
        self.max_lifetime, self.max_idle, self.password = max_lifetime, max_idle, password
        self.closed = False
        #: idle connections, the one returned last at the end, each with when it came back
        self.idle: list[tuple[float, psycopg.Connection[Any]]] = []
        self.opened: dict[psycopg.Connection[Any], float] = {}  # out or idle: when opened
        self.opening = 0
        self.waiting: deque[Waiter] = deque()  # callers waiting, first come first served
        self.lock = threading.Lock()

    def open(self, wait: bool = False, timeout: float = 30.0) -> None:
        """Nothing: connections are opened as they are asked for."""

    def __enter__(self) -> RecentFirstPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the idle connections now, and each one out when it comes back."""
        with self.lock:
            self.closed, idle, self.idle = True, self.idle, []
        for _, conn in idle:
            self._drop(conn)

    @contextmanager
    def connection(self, timeout: float | None = None) -> Iterator[psycopg.Connection[Any]]:
        """A connection for the block, taken back after it."""
        conn = self.getconn(timeout)
        try:
            yield conn
        finally:
            self.putconn(conn)

    def getconn(self, timeout: float | None = None) -> psycopg.Connection[Any]:
        """The connection returned last, or a new one; while ``max_size`` are out, the
        next one returned (or the room one closed leaves), in the order callers came, for
        up to ``timeout`` seconds (the pool's)."""
        with self.lock:
            if self.closed:
                raise psycopg.OperationalError("the connection pool is closed")
            now, stale = time.monotonic(), []
            while self.idle and now - self.idle[0][0] > self.max_idle:  # a spare unused
                stale.append(self.idle.pop(0)[1])
                del self.opened[stale[-1]]
            conn = self.idle.pop()[1] if self.idle else None
            room = conn is None and len(self.opened) + self.opening < self.max_size
            waiter = None if conn is not None or room else Waiter()
            if room:
                self.opening += 1
            elif waiter is not None:
                self.waiting.append(waiter)
        for spare in stale:
            spare.close()
        if waiter is not None:
            waiter.given.wait(self.timeout if timeout is None else timeout)
            with self.lock:
                if not waiter.given.is_set():
                    self.waiting.remove(waiter)
                    raise psycopg.OperationalError(
                        f"no connection free within {self.timeout} s: all {self.max_size} "
                        "are in use")
            conn = waiter.conn
        return self._connect() if conn is None else conn

    def _connect(self) -> psycopg.Connection[Any]:
        """A new connection, in the room counted in ``opening``."""
        try:
            kwargs = self.kwargs if self.password is None else {
                **self.kwargs, "password": self.password()}
            conn = psycopg.Connection.connect(self.conninfo, **kwargs)
            try:
                self.configure(conn)
            except BaseException:
                conn.close()
                raise
        except BaseException:
            with self.lock:
                self.opening -= 1
                self._make_room()
            raise
        with self.lock:
            self.opening -= 1
            self.opened[conn] = time.monotonic()
        return conn

    def putconn(self, conn: psycopg.Connection[Any]) -> None:
        """Take ``conn`` back (rolled back if a transaction was left open), or close it."""
        if conn.info.transaction_status in (TransactionStatus.INTRANS,
                                            TransactionStatus.INERROR):
            with suppress(psycopg.Error):
                conn.rollback()
        now = time.monotonic()
        with self.lock:
            keep = (not self.closed and conn.info.transaction_status == TransactionStatus.IDLE
                    and now - self.opened.get(conn, now) < self.max_lifetime)
            if keep and self.waiting:
                waiter = self.waiting.popleft()
                waiter.conn = conn
                waiter.given.set()
            elif keep:
                self.idle.append((now, conn))
        if not keep:
            self._drop(conn)

    def _drop(self, conn: psycopg.Connection[Any]) -> None:
        with self.lock:
            if self.opened.pop(conn, None) is not None:
                self._make_room()
        conn.close()

    def _make_room(self) -> None:
        """A connection fewer: the first caller waiting opens one (under the lock)."""
        if self.waiting:
            self.opening += 1
            self.waiting.popleft().given.set()


class Waiter:
    """A caller waiting for a connection: given one returned, or room to open one."""

    __slots__ = ("conn", "given")

    def __init__(self) -> None:
        self.conn: psycopg.Connection[Any] | None = None
        self.given = threading.Event()
