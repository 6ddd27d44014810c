"""Where the read models live: an SQLAlchemy engine for a store URL.

By default the read models share the ledger's database: its SQLite file, or its PostgreSQL
database and schema (``?schema=``). Another store can be named by URL, in the ledger's own
URL forms (``sqlite:///path``, ``postgresql://...?schema=name&pool_size=2``), by argument or
by ``$PROJECTIONS_URL``. A ``memory://`` ledger's read models go to an in-memory SQLite
database, private to the process. Nothing here runs at import time.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Json
from sqlalchemy import (
    JSON,
    Connection,
    Engine,
    Table,
    create_engine,
    event,
    insert,
    inspect,
    select,
    text,
    union_all,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.pool import StaticPool
from sqlalchemy.schema import CreateIndex, CreateSchema, CreateTable
from sqlalchemy.sql import literal, null

from allocation_ledger.adapters.sqlite import READ_ONLY, connect_read_only, writable
from allocation_ledger.config import CONNINFO, SCHEMA_NAME, parse_url
from allocation_ledger.domain.errors import InvalidRequest, StoreNotFound
from allocation_ledger.projections import tables

URL_ENV_VAR = "PROJECTIONS_URL"
#: SQLite waits this long (seconds) for another writer (the ledger) before giving up.
SQLITE_TIMEOUT = 30


def open_engine(store_env: Mapping[str, str], url: str | None = None, *,
                create: bool = True) -> Engine:
    """An engine for the read models (tables created on first use; with ``create`` false,
    readers, :class:`StoreNotFound` when they were never built, and nothing is created).

    ``url`` (else ``$PROJECTIONS_URL``) names their store; without one they share the
    ledger's, whose ``eventsourcing`` settings ``store_env`` holds (``EventStore.env``).
    """
    url = url or os.environ.get(URL_ENV_VAR)
    env: Mapping[str, str] = parse_url(url).env if url else store_env
    module = env.get("PERSISTENCE_MODULE", "")
    schema = None
    if "postgres" in module:
        schema = env.get("POSTGRES_SCHEMA") or "public"
        engine = _postgres_engine(env, schema)
    elif (env.get(READ_ONLY) == "y" and not create
          and not writable(path := env.get("SQLITE_DBNAME", ""))):
        # the ledger's file, for a reader who may not write it
        engine = _sqlite_engine("sqlite+pysqlite://", {"creator": lambda: connect_read_only(
            path, timeout=SQLITE_TIMEOUT, check_same_thread=False)}, wal=False)
    elif env.get("SQLITE_DBNAME"):  # a SQLite store, whichever factory opens it
        engine = _sqlite_engine(f"sqlite+pysqlite:///{env.get('SQLITE_DBNAME')}", {})
    else:
        engine = _sqlite_engine("sqlite+pysqlite://", {"poolclass": StaticPool})
    try:
        if create:
            create_tables(engine, schema)
        elif not inspect(engine).has_table(tables.tracking.name, schema):
            where = parse_url(url).redacted_url if url else "the ledger's store"
            raise StoreNotFound(where, "they were never built there (run projections "
                                "rebuild)", what="read models")
    except BaseException:
        engine.dispose()
        raise
    return engine


def _postgres_engine(env: Mapping[str, str], schema: str) -> Engine:
    conninfo = env[CONNINFO]  # libpq's own parameters and the PG* variables, as the store
    # Unqualified names everywhere (tables, the view) resolve in the ledger's schema. The
    # name is a checked identifier (``config.SCHEMA_NAME``), and quoted here as well.
    search_path = f'-c search_path="{_identifier(schema)}"'
    engine = create_engine(
        "postgresql+psycopg://",
        creator=lambda: psycopg.connect(conninfo, options=search_path),
        pool_size=int(env.get("POSTGRES_POOL_SIZE") or 2),
        max_overflow=int(env.get("POSTGRES_MAX_OVERFLOW") or 2),
        pool_pre_ping=True,
        pool_use_lifo=True,  # one busy connection stays warm (adapters/postgres.py)
    )
    return engine


def _identifier(schema: str) -> str:
    """A schema name checked once more where it meets SQL (the URL parser already refused
    anything else), so no caller can hand this module SQL in a name."""
    if not SCHEMA_NAME.fullmatch(schema):
        raise InvalidRequest(f"bad schema name {schema!r}", schema=schema)
    return schema


def _sqlite_engine(url: str, options: dict[str, Any], *, wal: bool = True) -> Engine:
    engine = create_engine(
        url, connect_args={"timeout": SQLITE_TIMEOUT, "check_same_thread": False}, **options
    )

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the driver, begin transactions: pysqlite's legacy handling
        # begins one only at the first write, so a batch's reads would fall outside it.
        # And use the ledger's WAL mode, so readers never block the writer.
        dbapi_connection.isolation_level = None
        if wal:  # a read-only connection changes nothing, the journal mode neither
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        immediate = conn.get_execution_options().get("immediate", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


def create_tables(engine: Engine, schema: str | None = None) -> None:
    """Create the read models' tables and view if they are missing.

    Several processes may open the same store at once: the DDL says ``IF NOT EXISTS`` and
    runs under a lock (PostgreSQL's advisory lock, SQLite's write lock). Where every table
    is there nothing is run, so a read-only role (an auditor) opens them.
    """
    if _complete(engine, schema):
        return
    with engine.connect().execution_options(immediate=True) as conn, conn.begin():
        if engine.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(hashtext('proj_create_tables'))"))
            # only where it is missing: even with IF NOT EXISTS, PostgreSQL requires
            # CREATE on the database, which a schema's owner need not have
            if schema and not inspect(conn).has_schema(schema):
                conn.execute(CreateSchema(_identifier(schema), if_not_exists=True))
        for table in tables.metadata.sorted_tables:
            conn.execute(CreateTable(table, if_not_exists=True))
            for index in sorted(table.indexes, key=lambda i: str(i.name)):
                conn.execute(CreateIndex(index, if_not_exists=True))
        body = _device_assignments().compile(
            dialect=conn.dialect, compile_kwargs={"literal_binds": True}
        )
        verb = "CREATE OR REPLACE VIEW" if engine.dialect.name == "postgresql" else (
            "CREATE VIEW IF NOT EXISTS")
        conn.execute(text(f"{verb} {tables.DEVICE_ASSIGNMENTS} AS {body}"))
        if "chain_hash" not in {c["name"] for c in inspect(conn).get_columns("proj_tracking")}:
            # read models from before the ledger's hash chain: bound from their next batch
            conn.execute(text("ALTER TABLE proj_tracking ADD COLUMN chain_hash "
                              f"{'bytea' if engine.dialect.name == 'postgresql' else 'BLOB'}"))


def _complete(engine: Engine, schema: str | None) -> bool:
    """True when every table and the view exist, with the tracking table's chain column
    and the providers' name index (read models from before it get it on their next open)."""
    with engine.connect() as conn:
        found = inspect(conn)
        names = set(found.get_table_names(schema=schema))
        if not set(tables.metadata.tables) <= names:
            return False
        if tables.DEVICE_ASSIGNMENTS not in found.get_view_names(schema=schema):
            return False
        indexes = {i["name"] for i in found.get_indexes(tables.providers.name, schema=schema)}
        return ("proj_providers_name" in indexes
                and "chain_hash" in {c["name"] for c in found.get_columns("proj_tracking",
                                                                          schema=schema)})


def _device_assignments() -> Any:
    holders, moving = tables.device_holders.c, tables.migration_devices.c
    return union_all(
        select(holders.provider_uuid, holders.resource_class, holders.device_id,
               holders.holder, literal("current").label("role"),
               null().label("migration_uuid")),
        select(moving.provider_uuid, moving.resource_class, moving.device_id, moving.holder,
               moving.role, moving.migration_uuid),
    )


def upsert_dialect(engine: Engine) -> Any:
    """The dialect module whose ``insert`` has ``on_conflict_do_nothing``."""
    return postgresql if engine.dialect.name == "postgresql" else sqlite


def insert_rows(conn: Connection, table: Table, rows: Sequence[dict[str, Any]]) -> None:
    """Insert many rows in the connection's transaction: PostgreSQL's COPY (several times
    faster than a pipelined executemany), an executemany elsewhere."""
    if conn.dialect.name != "postgresql":
        conn.execute(insert(table), list(rows))
        return
    names = [c.name for c in table.columns]
    wrapped = {c.name for c in table.columns if isinstance(c.type, JSON)}
    statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(table.name), sql.SQL(", ").join(map(sql.Identifier, names)))
    driver = conn.connection.driver_connection
    assert driver is not None
    with driver.cursor() as cursor, cursor.copy(statement) as copy:
        for row in rows:
            copy.write_row([Json(row[n]) if n in wrapped else row[n] for n in names])


def relax_durability(conn: Connection) -> None:
    """Let this transaction commit without waiting for its WAL flush (PostgreSQL).

    Safe for read models: a server crash can lose only whole recent transactions, rows and
    position together, and the projection then resumes from the earlier position.
    """
    if conn.dialect.name == "postgresql":
        conn.execute(text("SET LOCAL synchronous_commit = off"))


def analyse(engine: Engine, written: Sequence[Table]) -> None:
    """Give PostgreSQL's planner fresh statistics of tables just filled (a rebuild): until
    autovacuum gets to them it plans them as it last saw them, emptied, and a follower's
    lookup of 50 stream names read a projection's whole map (51 ms at 25,000 names, 1.6 ms
    analysed). A table the role does not own is skipped, with the server's warning.
    Elsewhere nothing: SQLite plans by its indexes alone."""
    if engine.dialect.name != "postgresql" or not written:
        return
    with engine.begin() as conn:
        conn.execute(text("ANALYZE " + ", ".join(f'"{t.name}"' for t in written)))


def empty(conn: Connection, emptied: Sequence[Table]) -> None:
    """Delete every row of these tables in the connection's transaction: PostgreSQL's
    TRUNCATE (a rebuild then inserts into clean tables and indexes, not beside the dead
    rows of the last one), a plain DELETE elsewhere (SQLite truncates that itself)."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("TRUNCATE " + ", ".join(f'"{t.name}"' for t in emptied)))
        return
    for table in emptied:
        conn.execute(table.delete())
