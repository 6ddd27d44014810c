"""The raw floors: the fastest plain ways to commit the same rows on the same database.

Every figure of the benchmark is also given as a ratio of a floor measured in the same run
on the same database, so a noisy machine moves both together. The table has the row shape
of a stored event (stream UUID, version, topic text, state bytes) and its unique
(stream, version) key; the driver is the plain one (``psycopg``, ``sqlite3``).

- ``insert``: one row per transaction, in one round trip: an INSERT in autocommit mode
  (a transaction of its own, committed by the server as the statement ends). This is the
  floor of a single command.
- ``insert_many(n)``: ``n`` rows in one transaction by ``executemany`` (psycopg pipelines
  the statements): the floor of a batch written row by row.
- ``copy_many(n)``: ``n`` rows in one transaction by ``COPY ... FROM STDIN`` on PostgreSQL,
  the fastest bulk path there is; SQLite has no COPY, so there it is ``executemany`` again.
- ``insert_ordered``: one row per transaction, committed in the order its position was
  taken, as a log that followers read by position must be: on PostgreSQL the transaction
  takes the table's ``EXCLUSIVE`` lock before it inserts (as the event store's append
  does, and ``eventsourcing``'s recorder before it), so transactions that insert follow
  one another, each holding the lock until its commit is flushed; one round trip. SQLite's
  write transactions follow one another anyway: there it is ``insert``.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from typing import Protocol

import psycopg

from benchmarks.scratch import conninfo, schema_of

TOPIC = "allocation_ledger.domain.consumer:Consumer.Created"
#: About the size of a stored claim event.
STATE = os.urandom(400)
TABLE = "bench_raw_floor"


class RawTable(Protocol):
    """A connection that commits rows in the plainest, fastest ways."""

    def insert(self) -> None:
        """Insert one row in a transaction of its own (one round trip)."""
        ...

    def insert_many(self, n: int) -> None:
        """Insert ``n`` rows by ``executemany`` in one transaction."""
        ...

    def insert_ordered(self) -> None:
        """Insert one row in a transaction of its own that commits in insert order."""
        ...

    def copy_many(self, n: int) -> None:
        """Insert ``n`` rows by the database's bulk path in one transaction."""
        ...

    def close(self) -> None:
        """Close the connection."""
        ...


class PostgresRawTable:
    """The floors on PostgreSQL (psycopg, an autocommit connection)."""

    def __init__(self, url: str) -> None:
        schema = schema_of(url) or "public"
        self._table = f'"{schema}"."{TABLE}"'
        self._conn = psycopg.connect(conninfo(url), autocommit=True)
        self._conn.execute(
            f"CREATE TABLE IF NOT EXISTS {self._table} (originator_id uuid NOT NULL, "
            "originator_version bigint NOT NULL, topic text, state bytea, "
            "PRIMARY KEY (originator_id, originator_version))"
        )
        self._sql = f"INSERT INTO {self._table} VALUES (%s, %s, %s, %s)"
        self._lock = f"LOCK TABLE {self._table} IN EXCLUSIVE MODE"
        self._copy = (f"COPY {self._table} (originator_id, originator_version, topic, state) "
                      "FROM STDIN")

    def insert(self) -> None:
        """One INSERT, committed by the server as it ends: one round trip."""
        self._conn.execute(self._sql, (uuid.uuid4(), 1, TOPIC, STATE), prepare=True)

    def insert_many(self, n: int) -> None:
        """``n`` INSERTs by ``executemany`` (pipelined) in one transaction."""
        with self._conn.transaction(), self._conn.cursor() as cursor:
            cursor.executemany(self._sql, _rows(n))

    def insert_ordered(self) -> None:
        """BEGIN, the table's EXCLUSIVE lock, one INSERT, COMMIT (ROLLBACK on an error):
        one round trip."""
        with self._conn.pipeline(), self._conn.transaction():
            self._conn.execute(self._lock, prepare=True)
            self._conn.execute(self._sql, (uuid.uuid4(), 1, TOPIC, STATE), prepare=True)

    def copy_many(self, n: int) -> None:
        """``n`` rows by ``COPY FROM STDIN`` in one transaction."""
        with self._conn.transaction(), self._conn.cursor() as cursor, \
                cursor.copy(self._copy) as copy:
            for row in _rows(n):
                copy.write_row(row)

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()


class SQLiteRawTable:
    """The floors on SQLite: the sqlite3 module in autocommit mode, WAL journal (as the
    event store uses)."""

    def __init__(self, path: str) -> None:
        self._conn = sqlite3.connect(path, timeout=30, isolation_level=None)
        if path != ":memory:":
            self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute(
            f"CREATE TABLE IF NOT EXISTS {TABLE} (originator_id TEXT, originator_version "
            "INTEGER, topic TEXT, state BLOB, PRIMARY KEY (originator_id, originator_version))"
        )
        self._sql = f"INSERT INTO {TABLE} VALUES (?, ?, ?, ?)"

    def insert(self) -> None:
        """One INSERT, a transaction of its own."""
        self._conn.execute(self._sql, (uuid.uuid4().hex, 1, TOPIC, STATE))

    def insert_many(self, n: int) -> None:
        """``n`` INSERTs by ``executemany`` in one transaction."""
        self._conn.execute("BEGIN")
        try:
            self._conn.executemany(self._sql, ((u.hex, v, t, s) for u, v, t, s in _rows(n)))
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def copy_many(self, n: int) -> None:
        """SQLite has no bulk path beyond ``executemany`` in one transaction."""
        self.insert_many(n)

    def insert_ordered(self) -> None:
        """SQLite's write transactions follow one another: :meth:`insert`."""
        self.insert()

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()


def _rows(n: int) -> list[tuple[uuid.UUID, int, str, bytes]]:
    return [(uuid.uuid4(), 1, TOPIC, STATE) for _ in range(n)]


def floor_target(store_url: str) -> str:
    """Where the floor of a store writes: a table in the store's own database (its
    PostgreSQL schema, or its SQLite file, so both share one write-ahead log), or an
    in-memory SQLite database for the in-memory store."""
    if store_url.startswith("postgres"):
        return store_url
    if store_url.startswith("sqlite:///"):
        return store_url.removeprefix("sqlite:///")
    return ":memory:"


def open_raw_table(target: str) -> RawTable:
    """The raw table ``target`` (from :func:`floor_target`) names."""
    if target.startswith("postgres"):
        return PostgresRawTable(target)
    return SQLiteRawTable(target)
