"""The SQLite append, with writer processes queued on a file lock.

SQLite lets one writer in at a time. The library's recorder begins a deferred transaction
and a writer that finds the database locked waits in SQLite's busy handler, which sleeps
in growing steps (up to 100 ms) and polls again: with several writer processes the file
sits idle between a commit and the next poll, and four writers together manage fewer
claims than one. This recorder takes an exclusive ``flock`` on a file beside the database
(``<database>-writer.lock``) around each append, so waiting writers sleep in the kernel and
the next one starts the moment the last one commits. The lock only orders appends; what an
append may write is still decided by the store's unique (stream, version) key. Threads of
one process queue on it too. Where ``fcntl`` does not exist (Windows) or the database is in
memory, appends run as in the library.

Each append also extends the hash chain (``adapters/chain.py``) inside its transaction: it
reads the newest row's position and chain hash and inserts its events at the positions that
follow (what SQLite would have given them), each with its link, having taken SQLite's write
lock first (a no-op write), so no other writer can slip in between. Opening a file store
runs ``PRAGMA quick_check`` and refuses a corrupt file (``StoreUnusable``), and one whose
events table predates the chain (``allocation-ledger db init`` migrates it). A store opened
for reading only (``open_store(read_only=True)``: the audit, history, views) by a process
that may not write the file or its directory connects read-only (:func:`connect_read_only`).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.request import pathname2url
from uuid import UUID

from eventsourcing.persistence import (
    ConnectionUnavailableError,
    InterfaceError,
    Notification,
    StoredEvent,
)
from eventsourcing.sqlite import (
    SQLITE3_DEFAULT_LOCK_TIMEOUT,
    SQLiteApplicationRecorder,
    SQLiteConnection,
    SQLiteCursor,
    SQLiteDatastore,
    SQLiteFactory,
)
from eventsourcing.utils import Environment, EnvType

from allocation_ledger.adapters import chain
from allocation_ledger.adapters.notifications import events_filter, notification, stream_events
from allocation_ledger.adapters.turns import FileLocks, file_turns
from allocation_ledger.domain.errors import StoreUnusable

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

LOCK_SUFFIX = "-writer.lock"
#: The store setting that opens the file for reading only (``open_store(read_only=True)``).
READ_ONLY = "LEDGER_SQLITE_READ_ONLY"
#: SQLite's refusals of a read-only WAL file whose index (``-shm``) cannot be created.
_NO_WAL_INDEX = {1544, 1288}  # SQLITE_READONLY_DIRECTORY, SQLITE_READONLY_CANTINIT
_CANTOPEN = 14  # SQLite's answer when it finds a log it cannot index
#: Prepared statements each connection keeps (Python's default).
STATEMENT_CACHE = 128
#: Connections open at once, and the seconds a thread waits for one (the library's pool's
#: defaults: 5 kept and 10 more, 5 seconds).
CONNECTIONS, CONNECTION_WAIT = 15, 5.0
log = logging.getLogger(__name__)


class StatementCachingDatastore(SQLiteDatastore):
    """The library's SQLite datastore with connections of our own, which keep their
    prepared statements.

    The library opens its connections with ``cached_statements=True``, which Python reads
    as a cache of one statement: an append (``BEGIN``, the write lock, the chain's head, the
    insert, ``COMMIT``) prepared every statement anew, about 45 us of its 230 us. As in the
    library's pool: at most :data:`CONNECTIONS` at once (a thread waits up to
    :data:`CONNECTION_WAIT` seconds for one), writers of this process in turn; idle ones
    are reused newest first (their caches warm); an in-memory database has one connection,
    used by one thread at a time.
    """

    def __init__(self, db_name: str, *, lock_timeout: int | None, read_only: bool) -> None:
        super().__init__(db_name, lock_timeout=lock_timeout)  # its pool is never used
        self.db_name, self.lock_timeout = db_name, lock_timeout
        self.in_memory = self.pool.is_sqlite_memory_mode
        self.read_only = read_only
        self.idle: list[SQLiteConnection] = []
        self.guard, self.writer = threading.Lock(), threading.Lock()
        self.slots = threading.BoundedSemaphore(CONNECTIONS)
        self.wal = self.in_memory

    @contextmanager
    def get_connection(self, *, commit: bool) -> Iterator[SQLiteConnection]:
        writer = self.writer if commit or self.in_memory else None  # writers first, as
        if writer is not None:  # the library's pool
            writer.acquire()
        try:
            if not self.slots.acquire(timeout=CONNECTION_WAIT):
                raise ConnectionUnavailableError(
                    f"no SQLite connection free within {CONNECTION_WAIT}s")
            try:
                with self.guard:
                    conn = self.idle.pop() if self.idle else None
                conn = conn or self.connect()
                try:
                    yield conn
                finally:
                    with self.guard:
                        self.idle.append(conn)
            finally:
                self.slots.release()
        finally:
            if writer is not None:
                writer.release()

    def connect(self) -> SQLiteConnection:
        options: dict[str, Any] = {
            "check_same_thread": False, "isolation_level": None,  # BEGIN is explicit
            "cached_statements": STATEMENT_CACHE,
            "timeout": self.lock_timeout or SQLITE3_DEFAULT_LOCK_TIMEOUT}
        unwritable = self.read_only and not writable(self.db_name)
        try:
            c = (connect_read_only(self.db_name, **options) if unwritable else
                 sqlite3.connect(database=self.db_name, uri=True, **options))
        except (sqlite3.Error, TypeError) as e:
            raise InterfaceError(e) from e
        if not self.wal and not unwritable:  # not changed by a reader who cannot write
            if c.execute("PRAGMA journal_mode;").fetchone()[0].lower() != "wal":
                c.execute("PRAGMA journal_mode=WAL;")
            self.wal = True
        c.row_factory = sqlite3.Row
        return SQLiteConnection(sqlite_conn=c, max_age=None)

    def close(self) -> None:
        with self.guard:
            idle, self.idle = self.idle, []
        for conn in idle:
            conn.close()
        super().close()


class StatementCachingSQLiteFactory(SQLiteFactory):
    """The library's SQLite factory, with a :class:`StatementCachingDatastore`."""

    def __init__(self, env: Environment | EnvType | None) -> None:
        super().__init__(env)
        old = self.datastore  # made, never connected: replaced with the same settings
        self.datastore = StatementCachingDatastore(
            old.pool.db_name, lock_timeout=old.pool.lock_timeout,
            read_only=self.env.get(READ_ONLY) == "y")


def writable(path: str) -> bool:
    """True when this process may write the file and its directory. A reader that may
    connects as a writer does, so that closing its connection leaves no ``-wal`` and
    ``-shm`` files behind (a read-only connection cannot remove them); one that may not
    uses :func:`connect_read_only`."""
    return os.access(path, os.W_OK) and os.access(
        os.path.dirname(os.path.abspath(path)), os.W_OK)


def connect_read_only(path: str, **options: Any) -> sqlite3.Connection:
    """A connection that can never write the file at ``path`` (SQLite's ``mode=ro``), for
    a reader who may not write it or its directory. A file in WAL mode is read through its
    index (``-shm``), which such a reader cannot create: where there is no write-ahead log
    to read (no ``-wal``, or an empty one: nobody has the file open to write) the file is
    opened as immutable instead, which reads it without the index. A log the reader
    cannot index is refused (``StoreUnusable``): reading the file without it would miss
    the events it holds."""
    uri = "file:" + pathname2url(os.path.abspath(path))
    c: sqlite3.Connection = sqlite3.connect(uri + "?mode=ro", uri=True, **options)
    try:
        c.execute("PRAGMA schema_version").fetchone()  # reads the header: opens the WAL
        return c
    except sqlite3.OperationalError as err:
        c.close()
        code = getattr(err, "sqlite_errorcode", None)
        wal = path + "-wal"
        logged = os.path.exists(wal) and os.path.getsize(wal) > 0
        if code not in _NO_WAL_INDEX and not (logged and code == _CANTOPEN):
            raise
        if logged:
            raise StoreUnusable(
                f"the SQLite file {path} has a write-ahead log ({wal}) that can be read only "
                "by a user who may write beside it: copy the file after its writers have "
                "stopped (the log is then merged into it), or read it as such a user",
                store=path) from err
    immutable: sqlite3.Connection = sqlite3.connect(uri + "?immutable=1", uri=True, **options)
    return immutable


class QueuedSQLiteApplicationRecorder(SQLiteApplicationRecorder):
    """A ``SQLiteApplicationRecorder`` whose appends queue on a lock file across processes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        pool = self.datastore.pool  # the library's settings (its connections are not used)
        self.lock_path = None if pool.is_sqlite_memory_mode or fcntl is None else (
            os.path.realpath(pool.db_name) + LOCK_SUFFIX)
        self.where = "memory" if pool.is_sqlite_memory_mode else pool.db_name
        self.writer_locks = None if self.lock_path is None else FileLocks(self.lock_path)
        #: writers' turns on contended streams (``adapters/turns.py``)
        self.turns = file_turns(
            None if self.lock_path is None else os.path.realpath(pool.db_name),
            pool.lock_timeout or SQLITE3_DEFAULT_LOCK_TIMEOUT)
        self.chain_key = chain.key_from_environment()
        #: opened for an audit (``eventstore.AUDIT``); a keyed chain found set back to
        #: unkeyed is then read as stored and marked, not refused (``chain.check_key``)
        self.chain_audit = self.chain_downgraded = False
        self.chain_table = f"{self.events_table_name}_chain"
        table = self.events_table_name
        self._lock = f"UPDATE {self.chain_table} SET keyed = keyed WHERE 0"
        self._head = f"SELECT rowid, chain_hash FROM {table} ORDER BY rowid DESC LIMIT 1"
        self._insert = (f"INSERT INTO {table} (rowid, originator_id, originator_version, "
                        "topic, state, chain_hash) VALUES (?, ?, ?, ?, ?, ?)")
        self._select = (f"SELECT rowid, originator_id, originator_version, topic, state, "
                        f"chain_hash FROM {table} WHERE rowid >= ? AND rowid <= ? ")
        self._select_stream = (f"SELECT originator_version, topic, state FROM {table} "
                               "WHERE originator_id = ?")

    def construct_create_table_statements(self) -> list[str]:
        """The library's events table with a ``chain_hash`` column, and the chain's facts."""
        [events] = super().construct_create_table_statements()
        return [events.replace("state BLOB, ", "state BLOB, chain_hash BLOB, "),
                f"CREATE TABLE IF NOT EXISTS {self.events_table_name}_chain ("
                "keyed INTEGER NOT NULL, key_check BLOB, migrated_at TEXT, "
                "migrated_up_to INTEGER)"]

    def create_table(self) -> None:
        """Check the file, create what is missing, refuse an unmigrated ledger or a wrong
        key."""
        with self.datastore.transaction(commit=True) as c:
            self._refuse_unusable(c)
            for statement in self.create_table_statements:
                c.execute(statement)
            c.execute(f"SELECT keyed, key_check FROM {self.chain_table}")
            found = c.fetchone()
            if found is None:
                key = self.chain_key
                c.execute(f"INSERT INTO {self.chain_table} (keyed, key_check) VALUES (?, ?)",
                          (key is not None, key.check() if key else None))
            else:
                chain.check_key(bool(found[0]), found[1], self.chain_key, self.where)

    def verify(self) -> None:
        """The checks of :meth:`create_table` for a store opened to read (nothing created):
        a damaged file, a ledger without the hash chain, a chain key not the ledger's."""
        with self.datastore.transaction(commit=False) as c:
            self._refuse_unusable(c)
            if _columns(c, self.chain_table):
                c.execute(f"SELECT keyed, key_check FROM {self.chain_table}")
                found = c.fetchone()
                if found is not None and chain.check_key(
                        bool(found[0]), found[1], self.chain_key, self.where,
                        audit=self.chain_audit):
                    self.chain_downgraded, self.chain_key = True, None  # read as stored

    def _refuse_unusable(self, c: SQLiteCursor) -> None:
        if self.lock_path is not None:
            quick_check(c, self.where)
        if _columns(c, self.events_table_name) and not self.chained(c):
            raise StoreUnusable(
                f"the ledger at {self.where} has no hash chain yet: run "
                "`allocation-ledger db init` to migrate it", store=self.where)

    def chain_facts(self) -> tuple[bool, str | None, int | None]:
        """Whether the chain is keyed; when and up to where a migration computed it."""
        with self.datastore.transaction(commit=False) as c:
            c.execute(f"SELECT keyed, migrated_at, migrated_up_to FROM {self.chain_table}")
            row = c.fetchone()
        return (bool(row[0]), row[1], row[2]) if row else (False, None, None)

    def chain_hash_before(self, position: int) -> bytes | None:
        """The chain hash of the last event before ``position``."""
        with self.datastore.transaction(commit=False) as c:
            c.execute(f"SELECT chain_hash FROM {self.events_table_name} WHERE rowid < ? "
                      "ORDER BY rowid DESC LIMIT 1", (position,))
            row = c.fetchone()
        return row[0] if row else None

    def integrity_problems(self) -> list[str]:
        """SQLite's full integrity check: what it found wrong (nothing: ``[]``)."""
        with self.datastore.transaction(commit=False) as c:
            try:
                c.execute("PRAGMA integrity_check")
                found = [row[0] for row in c.fetchall()]
            except sqlite3.DatabaseError as err:
                found = [str(err)]
        return [] if found == ["ok"] else found

    def chained(self, c: SQLiteCursor) -> bool:
        """True when the events table has its chain (and the chain's facts table)."""
        return ("chain_hash" in _columns(c, self.events_table_name)
                and bool(_columns(c, self.chain_table)))

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **_: Any
    ) -> Sequence[int] | None:
        """Append ``stored_events`` atomically, holding the writer lock."""
        with self.writer_lock(), self.datastore.transaction(commit=True) as c:
            return self.insert_chained(c, stored_events)

    def insert_chained(self, c: SQLiteCursor,
                       stored_events: Sequence[StoredEvent]) -> Sequence[int]:
        """Insert the events at the positions after the newest, each with its link."""
        # Take the write lock before reading the head: a read first would pin a snapshot
        # that another writer to the file (the read models) can make stale, and SQLite then
        # refuses the upgrade at once ("database is locked") instead of waiting its turn.
        c.execute(self._lock)
        c.execute(self._head)
        head = c.fetchone()
        position, previous = (head[0], head[1] or chain.GENESIS) if head else (0, chain.GENESIS)
        first, rows, key = position + 1, [], self.chain_key
        for event in stored_events:
            position += 1
            previous = chain.link(previous, position, event.originator_id,
                                  event.originator_version, event.topic, event.state, key)
            stream = event.originator_id
            rows.append((position, stream.hex if isinstance(stream, UUID) else stream,
                         event.originator_version, event.topic, event.state, previous))
        c.executemany(self._insert, rows)
        return list(range(first, position + 1))

    def select_notifications(
        self, start: int | None, limit: int, stop: int | None = None,
        topics: Sequence[str] = (), *, inclusive_of_start: bool = True,
    ) -> Sequence[Notification]:
        """The library's notifications, each with its ``chain_hash``."""
        if topics:
            return super().select_notifications(start, limit, stop, topics,
                                                inclusive_of_start=inclusive_of_start)
        low = (start or 1) if inclusive_of_start else (start or 0) + 1
        high = stop if stop is not None else 2 ** 63 - 1
        with self.datastore.transaction(commit=False) as c:
            c.execute(self._select + "ORDER BY rowid LIMIT ?", (low, high, limit))
            return [notification(row[0], UUID(row[1]), row[2], row[3], row[4], row[5])
                    for row in c.fetchall()]

    def select_events(
        self, originator_id: UUID | str, *, gt: int | None = None, lte: int | None = None,
        desc: bool = False, limit: int | None = None,
    ) -> Sequence[StoredEvent]:
        """The library's ``select_events``, each row's stream id not parsed again (every
        row is of the stream asked for): a cached provider brought up to date with other
        writers' events reads a dozen of them per claim."""
        rest, params = events_filter(gt, lte, desc, limit, "?")
        with self.datastore.transaction(commit=False) as c:
            c.execute(self._select_stream + rest, [
                originator_id.hex if isinstance(originator_id, UUID) else originator_id,
                *params])
            rows = c.fetchall()
        return stream_events(originator_id, rows, self.convert_originator_id)

    @contextmanager
    def writer_lock(self) -> Iterator[None]:
        """The lock file, opened for this append (each open is its own lock holder, so
        threads queue too) and locked; closing it lets the next writer in. A writer that
        cannot get it within the store's lock timeout (its holder hung) goes ahead without
        it, and SQLite's own locking decides, as without the queue."""
        if self.writer_locks is None:
            yield
            return
        timeout = self.datastore.pool.lock_timeout or SQLITE3_DEFAULT_LOCK_TIMEOUT
        fd = self.writer_locks.take(None, timeout)
        if fd is None:
            log.warning("%s held for %ss: appending without it", self.lock_path, timeout)
        try:
            yield
        finally:
            if fd is not None:
                self.writer_locks.release(fd)


def quick_check(c: SQLiteCursor, where: str) -> None:
    """Refuse a damaged file: SQLite's quick check (every page and record read once)."""
    try:
        c.execute("PRAGMA quick_check")
        problems = [row[0] for row in c.fetchall()]
    except sqlite3.DatabaseError as err:
        problems = [str(err)]
    if problems != ["ok"]:
        raise StoreUnusable(
            f"the SQLite file {where} is corrupt ({problems[0]}"
            f"{f' and {len(problems) - 1} more problems' if len(problems) > 1 else ''}): "
            "restore it from a backup", store=where, problems=len(problems))


def _columns(c: SQLiteCursor, table: str) -> list[str]:
    c.execute(f"PRAGMA table_info({table})")
    return [row[1] for row in c.fetchall()]
