"""Scratch stores for one benchmark run: created fresh, removed afterwards.

A SQLite store is a file in the run's work directory; a PostgreSQL store is a new schema in
the given database (so a run never touches anybody's data); the in-memory store lives in
one process only.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg

from allocation_ledger.adapters.sqlite import LOCK_SUFFIX
from allocation_ledger.adapters.turns import TURNS_SUFFIX
from allocation_ledger.application.ledger import Ledger
from allocation_ledger.bootstrap import open_ledger

#: Small pools: the benchmark writes from one thread per process.
POOL = "pool_size=2&max_overflow=2"


def conninfo(url: str) -> str:
    """A psycopg connection string for a PostgreSQL URL (query options dropped)."""
    parts = urlsplit(url)
    return urlunsplit(("postgresql", parts.netloc, parts.path, "", ""))


def schema_of(url: str) -> str | None:
    """The ``schema`` option of a store URL, if any."""
    for option in urlsplit(url).query.split("&"):
        key, _, value = option.partition("=")
        if key == "schema":
            return value
    return None


@contextmanager
def postgres_schema(base_url: str, prefix: str = "bench") -> Iterator[str]:
    """A fresh schema in ``base_url``'s database, dropped afterwards; yields its name."""
    schema = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(conninfo(base_url), autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield schema
    finally:
        with psycopg.connect(conninfo(base_url), autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@contextmanager
def scratch_store(kind: str, workdir: Path, postgres_url: str, name: str) -> Iterator[str]:
    """A fresh store of ``kind`` ("memory", "sqlite" or "postgresql"); yields its URL."""
    if kind == "memory":
        yield f"memory://{name}-{uuid.uuid4().hex[:8]}"
    elif kind == "sqlite":
        path = workdir / f"{name}-{uuid.uuid4().hex[:8]}.db"
        prime_wal(path)
        try:
            yield f"sqlite:///{path}"
        finally:
            for suffix in ("", "-wal", "-shm", LOCK_SUFFIX, TURNS_SUFFIX):  # every file
                Path(f"{path}{suffix}").unlink(missing_ok=True)
    elif kind == "postgresql":
        with postgres_schema(postgres_url, f"bench_{name}") as schema:
            yield f"{conninfo(postgres_url)}?schema={schema}&{POOL}"
    else:
        raise ValueError(f"unknown store kind {kind!r}")


def prime_wal(path: Path, megabytes: int = 8) -> None:
    """Put a new SQLite file in WAL mode and grow its write-ahead log to full size once.

    While a WAL file is still growing every commit also syncs its new size, which makes
    the first few thousand commits of a fresh file several times slower than all later
    ones; a benchmark should measure the steady state, so it starts after that.
    """
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE bench_prime (data BLOB)")
        block = bytes(64 * 1024)
        conn.executemany("INSERT INTO bench_prime VALUES (?)",
                         [(block,) for _ in range(megabytes * 16)])
        conn.commit()
        conn.execute("DROP TABLE bench_prime")
        conn.commit()
    conn.close()


class Opener:
    """Opens ledgers by URL. An in-memory store lives as long as its opener, so that it can
    be opened again like a database (its aggregate cache lives on too)."""

    def __init__(self) -> None:
        self._memory: dict[str, Ledger] = {}

    @contextmanager
    def open(self, url: str) -> Iterator[Ledger]:
        """The ledger over ``url``, closed afterwards unless it is in memory."""
        if url.startswith("memory:"):
            if url not in self._memory:
                self._memory[url] = open_ledger(url)
            yield self._memory[url]
            return
        with open_ledger(url) as ledger:
            yield ledger

    def close(self) -> None:
        """Drop the in-memory stores."""
        for ledger in self._memory.values():
            ledger.close()
        self._memory.clear()
