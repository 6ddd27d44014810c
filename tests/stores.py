"""Test stores: in-memory, SQLite files and PostgreSQL schemas, each fresh per test.

PostgreSQL comes from ``LEDGER_TEST_POSTGRES_URL`` (default: the local server's
``ledger_test`` database). Where it cannot be reached the PostgreSQL tests skip with the
reason, unless ``LEDGER_REQUIRE_POSTGRES=1`` (CI sets it), where that is a failure.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

DEFAULT_PG_URL = "postgresql://postgres@127.0.0.1:5432/ledger_test"


def postgres_base_url() -> str:
    """The test PostgreSQL database URL (no schema)."""
    return os.environ.get("LEDGER_TEST_POSTGRES_URL", DEFAULT_PG_URL)


def _conninfo(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(("postgresql", parts.netloc, parts.path, "", ""))


def require_postgres() -> str:
    """The base URL, or skip (fail under ``LEDGER_REQUIRE_POSTGRES=1``) with the reason."""
    url = postgres_base_url()
    try:
        with psycopg.connect(_conninfo(url), connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as err:
        reason = f"PostgreSQL not reachable at {url}: {err}".strip()
        if os.environ.get("LEDGER_REQUIRE_POSTGRES") == "1":
            pytest.fail(reason + " (LEDGER_REQUIRE_POSTGRES=1: this must not skip)")
        pytest.skip(reason)
    return url


@contextmanager
def postgres_schema_url() -> Iterator[str]:
    """A URL naming a fresh schema in the test database, dropped afterwards."""
    base = require_postgres()
    schema = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(_conninfo(base), autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield f"{base}?schema={schema}"
    finally:
        with psycopg.connect(_conninfo(base), autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@contextmanager
def store_url(kind: str, tmp_path: Path) -> Iterator[str]:
    """A fresh store of ``kind`` ("memory", "sqlite" or "postgres")."""
    if kind == "memory":
        yield "memory://"
    elif kind == "sqlite":
        yield f"sqlite:///{tmp_path / 'ledger.db'}"
    elif kind == "postgres":
        with postgres_schema_url() as url:
            yield url
    else:  # pragma: no cover
        raise ValueError(kind)
