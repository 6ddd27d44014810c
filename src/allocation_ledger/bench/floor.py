"""The raw floor: one plain INSERT per transaction into a table shaped like the event table.

Every figure of the benchmark is also given as a ratio of this floor, measured in the same
run on the same database, so a noisy machine moves both together. The table has the row
shape of a stored event (stream UUID, version, topic text, state bytes) and its unique
(stream, version) key; the driver is the plain one (``psycopg``, ``sqlite3``) with its
default transaction handling: what any program gets for one durable row.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from typing import Protocol

import psycopg

from allocation_ledger.bench.scratch import conninfo, schema_of

TOPIC = "allocation_ledger.domain.consumer:Consumer.Created"
#: About the size of a stored claim event.
STATE = os.urandom(400)
TABLE = "bench_raw_floor"


class RawTable(Protocol):
    """A connection that inserts one row per transaction."""

    def insert(self) -> None:
        """Insert one row and commit."""
        ...

    def close(self) -> None:
        """Close the connection."""
        ...


class PostgresRawTable:
    """The floor on PostgreSQL: psycopg, one INSERT and one COMMIT per row."""

    def __init__(self, url: str) -> None:
        schema = schema_of(url) or "public"
        self._table = f'"{schema}"."{TABLE}"'
        self._conn = psycopg.connect(conninfo(url))
        self._conn.execute(
            f"CREATE TABLE IF NOT EXISTS {self._table} (originator_id uuid NOT NULL, "
            "originator_version bigint NOT NULL, topic text, state bytea, "
            "PRIMARY KEY (originator_id, originator_version))"
        )
        self._conn.commit()
        self._sql = f"INSERT INTO {self._table} VALUES (%s, %s, %s, %s)"

    def insert(self) -> None:
        """Insert one row and commit."""
        self._conn.execute(self._sql, (uuid.uuid4(), 1, TOPIC, STATE))
        self._conn.commit()

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()


class SQLiteRawTable:
    """The floor on SQLite: the sqlite3 module, WAL journal (as the event store uses), one
    INSERT and one COMMIT per row."""

    def __init__(self, path: str) -> None:
        self._conn = sqlite3.connect(path, timeout=30)
        if path != ":memory:":
            self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute(
            f"CREATE TABLE IF NOT EXISTS {TABLE} (originator_id TEXT, originator_version "
            "INTEGER, topic TEXT, state BLOB, PRIMARY KEY (originator_id, originator_version))"
        )
        self._conn.commit()
        self._sql = f"INSERT INTO {TABLE} VALUES (?, ?, ?, ?)"

    def insert(self) -> None:
        """Insert one row and commit."""
        self._conn.execute(self._sql, (uuid.uuid4().hex, 1, TOPIC, STATE))
        self._conn.commit()

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()


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

