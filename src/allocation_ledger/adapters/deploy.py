"""``db init``: the deploy step that creates a ledger's schema, migrates an old one to the
hash chain, and grants the application and auditor roles their rights (PostgreSQL).

Run it as the schema's owner. A ledger from before the chain gets its ``chain_hash``
column, every existing event its link computed in ledger order (under the table's
exclusive lock), and the chain's facts table records that the chain up to that position was
computed by this migration, and when: the chain proves those events unchanged since the
migration, not before it (the audit says so).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.sql import SQL, Identifier

from allocation_ledger.adapters import chain
from allocation_ledger.adapters.pgschema import ABSENT, UNCHAINED, Names, schema_state
from allocation_ledger.config import StoreConfig

EVENTS = "ledger_events"  # the event store's table on PostgreSQL (the application "Ledger")
SQLITE_EVENTS = "stored_events"  # and on SQLite (the library's name there)


@dataclass(frozen=True)
class Initialised:
    """What ``db init`` did."""

    created: bool  # the schema was created
    migrated: int | None  # events chained by a migration (None: no migration)
    granted: tuple[str, ...] = ()

    def line(self) -> str:
        """One line for the command's output."""
        done = ["schema created" if self.created else "schema present"]
        if self.migrated is not None:
            done.append(f"migrated to the hash chain: {self.migrated} existing events chained")
        done += [f"granted {grant}" for grant in self.granted]
        return "; ".join(done)


def migrate_sqlite(path: str, key: chain.ChainKey | None) -> int | None:
    """Chain an unchained SQLite ledger in place; the events chained (None: nothing to do)."""
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        columns = [row[1] for row in conn.execute(f"PRAGMA table_info({SQLITE_EVENTS})")]
        if not columns or "chain_hash" in columns:
            return None
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(f"ALTER TABLE {SQLITE_EVENTS} ADD COLUMN chain_hash BLOB")
        rows = conn.execute(f"SELECT rowid, originator_id, originator_version, topic, state "
                            f"FROM {SQLITE_EVENTS} ORDER BY rowid").fetchall()
        links = list(_links(rows, key))
        conn.executemany(f"UPDATE {SQLITE_EVENTS} SET chain_hash = ? WHERE rowid = ?", links)
        conn.execute(f"CREATE TABLE IF NOT EXISTS {SQLITE_EVENTS}_chain (keyed INTEGER NOT NULL, "
                     "key_check BLOB, migrated_at TEXT, migrated_up_to INTEGER)")
        conn.execute(f"INSERT INTO {SQLITE_EVENTS}_chain VALUES (?, ?, datetime('now'), ?)",
                     (key is not None, key.check() if key else None,
                      rows[-1][0] if rows else 0))
        conn.execute("COMMIT")
        return len(rows)


def migrate_postgres(config: StoreConfig, key: chain.ChainKey | None) -> int | None:
    """Chain an unchained PostgreSQL ledger in one transaction; the events chained."""
    names = Names(config.env.get("POSTGRES_SCHEMA") or "public", EVENTS)
    table = names.qualified(EVENTS)
    with psycopg.connect(**connection(config)) as conn, conn.cursor() as curs:
        if schema_state(curs, names) != UNCHAINED:
            return None
        curs.execute(SQL("LOCK TABLE {0} IN ACCESS EXCLUSIVE MODE").format(table))
        curs.execute(SQL("ALTER TABLE {0} ADD COLUMN IF NOT EXISTS chain_hash bytea")
                     .format(table))
        with conn.cursor(name="ledger_chain_migration") as rows:  # streamed, not held
            rows.itersize = 10_000
            rows.execute(SQL("SELECT notification_id, originator_id, originator_version, "
                             "topic, state FROM {0} ORDER BY notification_id").format(table))
            links = list(_links(rows, key))
        curs.execute("CREATE TEMP TABLE chained (id bigint PRIMARY KEY, hash bytea) "
                     "ON COMMIT DROP")
        with curs.copy("COPY chained (id, hash) FROM STDIN") as copy:
            for link, position in links:
                copy.write_row((position, link))
        curs.execute(SQL("UPDATE {0} AS e SET chain_hash = c.hash FROM chained AS c "
                         "WHERE e.notification_id = c.id").format(table))
        curs.execute(SQL("CREATE TABLE IF NOT EXISTS {0} (keyed boolean NOT NULL, key_check "
                         "bytea, migrated_at timestamptz, migrated_up_to bigint)").format(
            names.qualified(names.chain_table)))
        curs.execute(SQL("INSERT INTO {0} VALUES (%s, %s, now(), %s)").format(
            names.qualified(names.chain_table)),
            (key is not None, key.check() if key else None, links[-1][1] if links else 0))
        for states in ("bytea[]", "json"):  # the append from before the chain
            curs.execute(SQL("DROP FUNCTION IF EXISTS {0}(uuid[], bigint[], text[], {1}, text)")
                         .format(names.qualified(names.function), SQL(states)))
        return len(links)


def _links(rows: Iterable[Any], key: chain.ChainKey | None) -> Iterator[tuple[bytes, int]]:
    previous = chain.GENESIS
    for position, stream, version, topic, state in rows:
        previous = chain.link(previous, position, stream, version, topic, bytes(state), key)
        yield previous, position


def grant(config: StoreConfig, app_role: str | None, auditor_role: str | None) -> list[str]:
    """Give ``app_role`` what appending and the read models need (no right to change the
    events table: only ``EXECUTE`` on the append) and ``auditor_role`` ``SELECT``."""
    names = Names(config.env.get("POSTGRES_SCHEMA") or "public", EVENTS)
    schema = Identifier(names.schema)
    done: list[str] = []
    with psycopg.connect(**connection(config)) as conn, conn.cursor() as curs:
        curs.execute("SELECT c.relname, c.relkind = 'r' FROM pg_class c JOIN pg_namespace n "
                     "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind IN "
                     "('r', 'v') AND c.relname LIKE 'proj\\_%%'", (names.schema,))
        found = curs.fetchall()
        read_models = [name for name, _ in found]
        writable = [name for name, table in found if table]
        ledger = [EVENTS, names.chain_table, names.snapshots]
        for role in filter(None, (app_role, auditor_role)):
            who = Identifier(role)
            curs.execute(SQL("GRANT USAGE ON SCHEMA {0} TO {1}").format(schema, who))
            for name in [*ledger, *read_models]:
                curs.execute(SQL("GRANT SELECT ON {0} TO {1}").format(
                    names.qualified(name), who))
            done.append(f"SELECT to {role}")
        if app_role:
            who = Identifier(app_role)
            curs.execute(SQL("GRANT INSERT ON {0} TO {1}").format(
                names.qualified(names.snapshots), who))
            for states in ("bytea[]", "json"):
                curs.execute(SQL("GRANT EXECUTE ON FUNCTION {0}(uuid[], bigint[], text[], {1},"
                                 " text, bytea, bytea) TO {2}").format(
                    names.qualified(names.function), SQL(states), who))
            for name in writable:  # derived data, rebuilt at will
                curs.execute(SQL("GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON {0} "
                                 "TO {1}").format(names.qualified(name), who))
            curs.execute(SQL("GRANT USAGE ON ALL SEQUENCES IN SCHEMA {0} TO {1}").format(
                schema, who))
            done.append(f"EXECUTE on the append, INSERT on snapshots, the read models to "
                        f"{app_role}")
    return done


def connection(config: StoreConfig) -> dict[str, Any]:
    """psycopg's connection arguments for a PostgreSQL store."""
    env = config.env
    return {"dbname": env["POSTGRES_DBNAME"], "host": env["POSTGRES_HOST"],
            "port": env["POSTGRES_PORT"], "user": env["POSTGRES_USER"],
            "password": env["POSTGRES_PASSWORD"] or None, "connect_timeout": 10}


def state_of(config: StoreConfig) -> str:
    """The schema's state (``pgschema.ABSENT``, ``UNCHAINED`` or ``CHAINED``)."""
    names = Names(config.env.get("POSTGRES_SCHEMA") or "public", EVENTS)
    with psycopg.connect(**connection(config)) as conn, conn.cursor() as curs:
        return schema_state(curs, names)


__all__ = ["ABSENT", "Initialised", "grant", "migrate_postgres", "migrate_sqlite", "state_of"]
