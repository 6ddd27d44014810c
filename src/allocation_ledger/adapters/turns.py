"""Turns on contended streams: writers to the same host wait for each other instead of
racing.

Two processes that claim on the same host both read it, both decide, and the store's unique
(stream, version) key lets only the first append in; the second was work for nothing and
runs again. On a few busy hosts shared by many writers that is most appends, and the
appends refused still queue for the store's write lock first. A *turn* is a lock on one
stream held from before the stream is read until after the append that writes it has
committed (or failed): a writer that wants a stream another writer holds waits for the
append, then reads what it wrote, and decides on fresh state.

A turn never decides anything: the store's key still refuses every stale append, and a
writer that cannot get its turn (a holder that hung) goes on without it, as before. A
thread waits for at most its first turn of an attempt and takes any later one only if it is
free, so two writers never wait for each other in a circle.

- PostgreSQL: a transaction advisory lock (``pg_advisory_xact_lock``) keyed by the stream
  id, in a transaction the thread opens for it on a connection it keeps for its reads and
  its append (so a thread never holds one connection while waiting for another). The lock
  and the stream's new events are asked for together, and the append is sent with its
  ``COMMIT``: a held turn costs no round trip of its own, and the commit lets go of it at the
  moment the events become visible. An attempt that ends without appending rolls back; a
  connection lost rolls back on the server. The wait is bounded by the store's
  ``lock_timeout`` (with ``lock_timeout=0``, by nothing but the server's
  ``idle_in_transaction_session_timeout`` on a holder that hangs). Threads of one process
  queue for a stream on a lock of their own first, so only one of them at a time holds a
  connection while it waits.
- SQLite: an open-file-description lock (Linux ``F_OFD_SETLK``) on one byte of a file
  beside the database (``<database>-turns.lock``), the byte chosen by the stream id; threads
  and processes queue alike, and the kernel lets go when a process dies. A writer waits for
  it asleep in the kernel (:class:`FileLocks`, which also holds the store's writer lock,
  ``adapters/sqlite.py``), not polling. A command's first attempt that takes no turn asks,
  before it appends, whether another holds one on a stream it writes
  (:meth:`Turns.held_elsewhere`, ``F_OFD_GETLK``), and lets it go first, waiting for it
  :data:`YIELD_WAIT` seconds at most (``WritePolicy.yields_to`` says when; a group
  commit's append does not ask). Elsewhere (no OFD locks) there are no turns.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import struct
import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import Any
from uuid import UUID

import psycopg
from eventsourcing import persistence
from psycopg.pq import TransactionStatus
from psycopg.rows import tuple_row

from allocation_ledger.adapters.pgerrors import as_library_errors

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

#: Locks of one process that its threads queue on for a stream before the database's turn.
PROCESS_QUEUES = 4096
#: Bytes of the SQLite turns file that stream ids are spread over.
FILE_SLOTS = 1 << 30
TURNS_SUFFIX = "-turns.lock"
#: Seconds a writer that found a stream held by another (:meth:`Turns.held_elsewhere`) waits
#: for that stream's turn at most, on its next take: a turn lasts milliseconds, and a
#: holder that hung must not hold up, for the store's whole lock timeout, a writer that had
#: never been held up there.
YIELD_WAIT = 2.0


def stream_key(stream: UUID) -> int:
    """A signed 64-bit key for a stream (its first eight bytes)."""
    return int.from_bytes(stream.bytes[:8], "big", signed=True)


class Turns:
    """No turns (a store in memory, a platform without the locks): nothing is held."""

    def take(self, stream: UUID, *, wait: bool) -> bool:
        """Hold ``stream`` for this thread until :meth:`end`; True if it is held. With
        ``wait`` false only a free stream is taken."""
        return False

    def take_reading(self, stream: UUID, *, wait: bool,
                     after: int) -> tuple[bool, list[Any] | None]:
        """:meth:`take`, and where the store can, the stream's stored events after version
        ``after`` read in the same round trip (else None)."""
        return self.take(stream, wait=wait), None

    def holding(self) -> bool:
        """True when this thread's append is to be made by :meth:`commit`."""
        return False

    def commit(self, statement: Any, params: Any) -> list[Any]:
        """Append (only where :meth:`holding`)."""
        raise NotImplementedError

    def end(self) -> None:
        """Let go of every stream this thread holds."""

    def held_elsewhere(self, streams: Iterable[UUID]) -> list[UUID]:
        """Those of ``streams`` that another writer holds (and this thread does not), where
        the store can tell without a round trip (SQLite); else none."""
        return []


# -- PostgreSQL -------------------------------------------------------------------------

class AdvisoryTurns(Turns):
    """Turns as PostgreSQL transaction advisory locks (see the module).

    The first turn of an attempt opens a transaction on a connection the thread keeps
    (``BEGIN``, the lock, and the stream's new events, sent together: one round trip); the
    thread's reads join it; its append is sent with ``COMMIT`` (:meth:`commit`), and the
    commit lets go of the turns at the moment the events become visible, without another
    message. An attempt that ends without appending rolls back. A kept connection found
    closed or in a failed transaction is let go (its turns are gone with it), and the
    thread's reads go back to the pool.

    Threads of one process queue for a stream on a lock of the process first, so that at
    most one of them holds a connection while it waits for the database's turn: waiting
    threads never take the pool's connections from the thread that holds the turn.
    """

    def __init__(self, datastore: Any, lock_timeout: float, read: Any) -> None:
        self._local = threading.local()
        # the store's lock timeout (0: wait as long as it takes, as for its table lock)
        self._seconds = float(lock_timeout)
        self._timeout = f"{self._seconds}s" if lock_timeout else "0"
        #: the statement reading a stream's events after a version (stream, version)
        self._read = read
        self._queues = [threading.Lock() for _ in range(PROCESS_QUEUES)]
        connect: Callable[[], AbstractContextManager[Any]] = datastore.get_connection
        begin: Callable[..., AbstractContextManager[Any]] = datastore.transaction
        self._connect = connect

        @contextmanager
        def get_connection() -> Iterator[Any]:
            """The thread's connection while it holds turns, else one from the pool."""
            pinned = self._pinned()
            if pinned is None:
                with connect() as conn:
                    yield conn
            else:
                with as_library_errors():
                    yield pinned

        @contextmanager
        def transaction(*, commit: bool = False) -> Iterator[Any]:
            """Inside the thread's transaction of turns, a cursor in it; else as before."""
            pinned = self._pinned()
            if pinned is None:
                with begin(commit=commit) as cursor:
                    yield cursor
            else:
                with as_library_errors():
                    yield pinned.cursor()

        datastore.get_connection = get_connection
        datastore.transaction = transaction

    def _pinned(self) -> Any:
        """The thread's kept connection while it is usable; a broken one is let go."""
        conn = getattr(self._local, "conn", None)
        if conn is not None and (conn.closed or conn.info.transaction_status in (
                TransactionStatus.INERROR, TransactionStatus.UNKNOWN)):
            log.warning("the connection holding turns broke: going on without them")
            self.end()
            return None
        return conn

    def holding(self) -> bool:
        """True while this thread's transaction of turns is open."""
        return self._pinned() is not None

    def take(self, stream: UUID, *, wait: bool) -> bool:
        return self._take(stream, wait=wait, after=None)[0]

    def take_reading(self, stream: UUID, *, wait: bool,
                     after: int) -> tuple[bool, list[Any] | None]:
        """Take the turn and read the stream's events after version ``after`` in the same
        round trip: (held, rows of originator_id, originator_version, topic, state); rows
        are None where the turn was not taken."""
        return self._take(stream, wait=wait, after=after)

    def _take(self, stream: UUID, *, wait: bool,
              after: int | None) -> tuple[bool, list[Any] | None]:
        local = self._local
        key = stream_key(stream)
        if key in getattr(local, "keys", ()):
            return True, None
        queue = self._queues[key % PROCESS_QUEUES]
        if wait:
            queued = queue.acquire(timeout=self._seconds or -1)
        else:
            queued = queue.acquire(blocking=False)
        if not queued:
            return False, None  # another thread of this process holds it (or waits)
        first = getattr(local, "conn", None) is None
        try:
            if first:
                local.keys, local.queues = set(), []
                local.stack = ExitStack()
                local.conn = local.stack.enter_context(self._connect())
            local.queues.append(queue)
            got, rows = self._lock_and_read(local.conn, stream, key, first=first,
                                            wait=wait, after=after)
        except persistence.OperationalError as err:  # timed out, no connection, server gone
            log.warning("no turn on stream %s (%s): going on without it", stream, err)
            self.end(also=queue)
            return False, None
        except BaseException:
            self.end(also=queue)
            raise
        if got:
            local.keys.add(key)
        else:
            local.queues.remove(queue)
            queue.release()
            if first:
                self.end()
        return got, rows

    def _lock_and_read(self, conn: Any, stream: UUID, key: int, *, first: bool, wait: bool,
                       after: int | None) -> tuple[bool, list[Any] | None]:
        with as_library_errors():
            lock = conn.cursor(row_factory=tuple_row)
            reading = None if after is None else conn.cursor(binary=True,
                                                             row_factory=tuple_row)
            with conn.pipeline():
                if first:
                    conn.execute("BEGIN")
                if wait:
                    conn.execute("SELECT set_config('lock_timeout', %s, true)",
                                 (self._timeout,))
                    lock.execute("SELECT pg_advisory_xact_lock(%s)", (key,))
                else:
                    lock.execute("SELECT pg_try_advisory_xact_lock(%s)", (key,))
                if reading is not None:
                    reading.execute(self._read, (stream, after), prepare=True)
            row = lock.fetchone()
            got = wait or bool(row and row[0])
            return got, reading.fetchall() if reading is not None else None

    def commit(self, statement: Any, params: Any) -> list[Any]:
        """Run the append in this thread's transaction of turns and commit it, in one round
        trip; the rows it returns. The turns end with it, whether it commits or fails."""
        conn = self._local.conn
        try:
            with as_library_errors():
                cursor = conn.cursor(row_factory=tuple_row)
                try:
                    with conn.pipeline():
                        cursor.execute(statement, params, prepare=True)
                        conn.execute("COMMIT")
                except psycopg.Error:
                    with contextlib.suppress(psycopg.Error):
                        if not conn.closed:
                            conn.execute("ROLLBACK")
                    raise
                return list(cursor.fetchall())
        finally:
            self.end()

    def end(self, also: threading.Lock | None = None) -> None:
        """Let go of the thread's turns (roll back what is open) and its kept connection,
        and of ``also``, a process queue taken on the way."""
        local = self._local
        queues: list[threading.Lock] = getattr(local, "queues", [])
        if also is not None and also not in queues:
            also.release()
        conn = getattr(local, "conn", None)
        if conn is None and not queues and getattr(local, "stack", None) is None:
            return  # nothing held (every attempt ends here)
        try:
            if conn is not None and not conn.closed and (
                    conn.info.transaction_status != TransactionStatus.IDLE):
                conn.execute("ROLLBACK")  # lets go of the turns
        except psycopg.Error as err:
            log.warning("could not roll back a transaction of turns (%s): closing its "
                        "connection", err)
            if conn is not None:
                conn.close()  # its session ends, and its locks with it
        finally:
            local.conn = None
            local.keys = set()
            local.queues = []
            for queue in queues:
                queue.release()
            stack = getattr(local, "stack", None)
            local.stack = None
            if stack is not None:
                stack.close()


# -- SQLite -----------------------------------------------------------------------------

_OFD = fcntl is not None and hasattr(fcntl, "F_OFD_SETLK")
#: What a file lock is keyed by: a byte of the file, or ``None`` for the whole file.
Key = int | None


def _flock(kind: int, slot: int) -> bytes:
    """A ``struct flock`` for one byte at ``slot`` (Linux: l_type, l_whence, l_start,
    l_len, l_pid, padded to 32 bytes)."""
    return struct.pack("hhqqi4x", kind, os.SEEK_SET, slot, 1, 0)


def _try_lock(fd: int, key: Key) -> bool:
    """Lock ``key`` of ``fd``'s file if it is free; False if another holder has it."""
    try:
        if key is None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        else:
            fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _flock(fcntl.F_WRLCK, key))
    except OSError as err:  # EAGAIN/EWOULDBLOCK, or EACCES on some systems, for a held lock
        if err.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def _wait_lock(fd: int, key: Key) -> None:
    """Lock ``key`` of ``fd``'s file, sleeping in the kernel until it is free."""
    if key is None:
        fcntl.flock(fd, fcntl.LOCK_EX)
    else:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLKW, _flock(fcntl.F_WRLCK, key))


class _Waiter:
    """A thread waiting for a lock a helper waits for: the descriptor handed over, or the
    helper's error."""

    __slots__ = ("error", "fd", "ready")

    def __init__(self) -> None:
        self.ready = threading.Event()
        self.fd: int | None = None
        self.error: OSError | None = None


class FileLocks:
    """Exclusive locks on one file, each held by an open file description of its own and
    waited for in the kernel, with a deadline: the writer lock (the whole file, ``flock``)
    or turns (one byte each, OFD locks). Both belong to the description, so threads of one
    process queue for them as processes do, and the kernel lets go when a holder dies.

    The kernel has no timed file lock: a lock is tried, or waited for without end. A lock
    not free at once is waited for by a helper thread, on a description it opens itself,
    while the caller waits for the helper no longer than its deadline. A key has at most
    one helper in a process: the threads that want it queue on it, and the helper waits
    again for the next of them each time it hands a lock over. A lock got for a caller
    that gave up (its holder hung for the whole deadline) is let go by closing the
    helper's own description, which holds nothing else; a caller that comes later joins
    the helper still waiting rather than starting another. The helper ends when no thread
    waits any more.

    A process forked from one that holds or waits for these locks starts without them: it
    closes its copies of the parent's descriptions (which would otherwise keep the parent's
    locks held after the parent lets go) and has no helpers until it waits itself.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._mutex = threading.Lock()
        self._queues: dict[Key, deque[_Waiter]] = {}  # keys with a helper, their waiters
        self._open_fds: set[int] = set()  # every description opened here and not let go
        _every.add(self)

    def _open(self) -> int:
        # Opened and noted under the mutex, which a fork waits for (_before_fork): a child
        # never inherits a description it does not know to close.
        with self._mutex:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            self._open_fds.add(fd)
        return fd

    def release(self, fd: int) -> None:
        """Let go of the lock :meth:`take` gave (close its description)."""
        with self._mutex:  # (closed before a fork, or closed by the child: see _open)
            self._open_fds.discard(fd)
            os.close(fd)

    def take(self, key: Key, timeout: float) -> int | None:
        """A descriptor of a description holding ``key`` (closing it lets go), or None if
        the lock is still held by another after ``timeout`` seconds."""
        fd = self._open()
        try:
            if _try_lock(fd, key):
                return fd
        except BaseException:
            self.release(fd)
            raise
        self.release(fd)
        if timeout <= 0:
            return None
        waiter = _Waiter()
        with self._mutex:
            queue = self._queues.get(key)
            if queue is None:
                queue = self._queues[key] = deque()
                threading.Thread(target=self._help, args=(key, queue), daemon=True,
                                 name="ledger-file-lock").start()
            queue.append(waiter)
        waiter.ready.wait(timeout)
        with self._mutex:
            if not waiter.ready.is_set():  # given up: the helper will not hand it over
                queue.remove(waiter)
                return None
        if waiter.error is not None:
            raise waiter.error
        return waiter.fd

    def _help(self, key: Key, queue: deque[_Waiter]) -> None:
        """Wait for ``key`` for each waiter of ``queue`` in turn, until none is left."""
        while True:
            try:
                fd = self._open()
                try:
                    _wait_lock(fd, key)
                except BaseException:
                    self.release(fd)
                    raise
            except OSError as err:
                with self._mutex:
                    del self._queues[key]
                    for waiter in queue:
                        waiter.error = err
                        waiter.ready.set()
                return
            with self._mutex:
                handed = bool(queue)
                if handed:
                    waiter = queue.popleft()
                    waiter.fd = fd
                    waiter.ready.set()
                more = bool(queue)
                if not more:
                    del self._queues[key]
            if not handed:
                self.release(fd)  # its waiter gave up: let go at once
            if not more:
                return


def _before_fork() -> None:
    """Hold every mutex across a fork, so that no description is being opened or closed
    at that moment (one the child inherits unnoted would keep the parent's lock held
    after the parent let go)."""
    _forking[:] = list(_every)
    for locks in _forking:
        locks._mutex.acquire()


def _after_fork_in_parent() -> None:
    for locks in _forking:
        locks._mutex.release()
    _forking.clear()


def _after_fork() -> None:
    """A child process has none of its parent's helper threads and holds none of its
    locks: it closes its copies of the parent's descriptions."""
    _forking.clear()
    for locks in list(_every):
        for fd in locks._open_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        locks._mutex = threading.Lock()
        locks._queues = {}
        locks._open_fds = set()


_every: weakref.WeakSet[FileLocks] = weakref.WeakSet()
_forking: list[FileLocks] = []
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                        after_in_child=_after_fork)


class FileTurns(Turns):
    """Turns as byte locks on a file beside the database (see the module), each held by a
    description of its own (:class:`FileLocks`)."""

    def __init__(self, path: str, lock_timeout: float) -> None:
        self.path = path
        self._locks = FileLocks(path)
        self._timeout = lock_timeout
        self._local = threading.local()

    def take(self, stream: UUID, *, wait: bool) -> bool:
        held: dict[int, int] = getattr(self._local, "held", None) or {}
        slot = stream.int % FILE_SLOTS
        if slot in held:
            return True
        timeout = self._timeout
        yielded: set[int] = getattr(self._local, "yielded", set())
        if slot in yielded:  # found held by another just before: not waited for long
            yielded.discard(slot)
            timeout = min(timeout, YIELD_WAIT)
        fd = self._locks.take(slot, timeout if wait else 0)
        if fd is not None:
            held[slot] = fd
            self._local.held = held
            return True
        if wait:
            log.warning("no turn on stream %s within %ss: going on without it", stream,
                        timeout)
        if not held:
            self.end()
        return False

    def end(self) -> None:
        held: dict[int, int] = getattr(self._local, "held", None) or {}
        self._local.held = {}
        for fd in held.values():
            self._locks.release(fd)

    def held_elsewhere(self, streams: Iterable[UUID]) -> list[UUID]:
        """Those of ``streams`` whose byte another description locks, asked on a
        description of its own that locks nothing (``F_OFD_GETLK``: about 4 us with its
        open and close); this thread's next wait for one of them is at most
        :data:`YIELD_WAIT`. A question the system refuses (no descriptor left, say) is
        answered with none: the writer then appends as it would without asking."""
        held: dict[int, int] = getattr(self._local, "held", None) or {}
        wanted = [s for s in streams if s.int % FILE_SLOTS not in held]
        if not wanted:
            return []
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                found = [s for s in wanted if struct.unpack("hhqqi4x", fcntl.fcntl(
                    fd, fcntl.F_OFD_GETLK, _flock(fcntl.F_WRLCK, s.int % FILE_SLOTS)))[0]
                         != fcntl.F_UNLCK]
            finally:
                os.close(fd)
        except OSError as err:
            log.warning("cannot ask for turns on %s (%s): appending without", self.path, err)
            return []
        self._local.yielded = {s.int % FILE_SLOTS for s in found}
        return found


def file_turns(database: str | None, lock_timeout: float) -> Turns:
    """Turns for a SQLite file (none in memory, or without OFD locks)."""
    if database is None or not _OFD:
        return Turns()
    return FileTurns(database + TURNS_SUFFIX, lock_timeout)
