"""The composition root: the one place that wires configuration, store and service."""

from __future__ import annotations

import importlib
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from allocation_ledger.adapters import chain, deploy
from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.adapters.postgres import OneTripApplicationRecorder
from allocation_ledger.application.ledger import Ledger
from allocation_ledger.config import StoreConfig, parse_url
from allocation_ledger.domain.errors import StoreUnusable


def open_store(url: str | None = None) -> tuple[EventStore, StoreConfig]:
    """The event store a URL names (see :mod:`allocation_ledger.config`); schema created on
    first use, nothing created where it exists. :class:`StoreUnusable` for a corrupt SQLite
    file, a ledger not yet migrated to the hash chain, or a chain key not the ledger's."""
    config = parse_url(url)
    with _schema_lock(config):
        try:
            return EventStore(env=config.env), config
        except sqlite3.DatabaseError as err:  # damaged past what quick_check could read
            raise StoreUnusable(f"the SQLite file {config.env.get('SQLITE_DBNAME')} is "
                                f"corrupt ({err}): restore it from a backup") from err


def init_store(url: str | None = None, *, app_role: str | None = None,
               auditor_role: str | None = None) -> deploy.Initialised:
    """The deploy step (``allocation-ledger db init``), run as the schema's owner: create
    the schema (and the read models' tables), or migrate a ledger from before the hash
    chain; replace the append functions; grant the roles named their rights."""
    config = parse_url(url)
    key = chain.key_from_environment()
    if config.kind == "sqlite":
        path = config.env["SQLITE_DBNAME"]
        created = not os.path.exists(path)
        migrated = None if created else deploy.migrate_sqlite(path, key)
    elif config.kind == "postgresql":
        created = deploy.state_of(config) == deploy.ABSENT
        migrated = deploy.migrate_postgres(config, key)
    else:
        return deploy.Initialised(True, None)
    store, _ = open_store(url)
    try:
        if isinstance(store.recorder, OneTripApplicationRecorder):
            store.recorder.create_schema()
        _create_read_models(store)
    finally:
        store.close()
    granted: list[str] = []
    if config.kind == "postgresql" and (app_role or auditor_role):
        granted = deploy.grant(config, app_role, auditor_role)
    return deploy.Initialised(created, migrated, tuple(granted))


def _create_read_models(store: EventStore) -> None:
    """The read models' tables beside the ledger, when the projections package is there."""
    try:
        where = importlib.import_module("projections.store")
    except ImportError:
        return
    where.open_engine(store.env).dispose()


@contextmanager
def _schema_lock(config: StoreConfig) -> Iterator[None]:
    """Serialise schema creation between processes opening one PostgreSQL store at once.

    The library creates its tables (and replaces a function) on every open; PostgreSQL
    refuses two concurrent replacements ("tuple concurrently updated"), so services starting
    together would crash. An advisory lock per database and schema lets them take turns.
    """
    if config.kind != "postgresql":
        yield
        return
    env = config.env
    key = f"allocation_ledger:{env['POSTGRES_DBNAME']}:{env.get('POSTGRES_SCHEMA', 'public')}"
    with psycopg.connect(
        dbname=env["POSTGRES_DBNAME"], host=env["POSTGRES_HOST"], port=env["POSTGRES_PORT"],
        user=env["POSTGRES_USER"], password=env["POSTGRES_PASSWORD"] or None,
        autocommit=True, connect_timeout=10,
    ) as conn:
        conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (key,))
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (key,))


def open_ledger(
    url: str | None = None, *, read_side: bool = False, projections_url: str | None = None
) -> Ledger:
    """A :class:`Ledger` over the store ``url`` names: the argument, else ``$LEDGER_URL``,
    else ``sqlite:///ledger.db`` in the working directory.

    With ``read_side`` its projections are plugged in as ``ledger.reads`` (kept in the
    ledger's own database, or in ``projections_url``).
    """
    store, _ = open_store(url)
    ledger = Ledger(store)
    if read_side:
        from projections.readmodels import ReadModels
        from projections.service import ProjectedReadSide

        ledger.read_side = ProjectedReadSide(ReadModels.of(ledger, projections_url))
    return ledger
