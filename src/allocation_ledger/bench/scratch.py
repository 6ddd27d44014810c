"""Scratch stores for one benchmark run: created fresh, removed afterwards.

A SQLite store is a file in the run's work directory; a PostgreSQL store is a new schema in
the given database (so a run never touches anybody's data); the in-memory store lives in
one process only.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg

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
        yield "memory://"
    elif kind == "sqlite":
        path = workdir / f"{name}-{uuid.uuid4().hex[:8]}.db"
        try:
            yield f"sqlite:///{path}"
        finally:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
    elif kind == "postgresql":
        with postgres_schema(postgres_url, f"bench_{name}") as schema:
            yield f"{conninfo(postgres_url)}?schema={schema}&{POOL}"
    else:
        raise ValueError(f"unknown store kind {kind!r}")
