"""The composition root: the one place that wires configuration, store and service."""

from __future__ import annotations

import os
import sqlite3
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import psycopg
from eventsourcing.persistence import PersistenceError

from allocation_ledger.adapters import chain, deploy
from allocation_ledger.adapters import sqlite as sqlite_adapter
from allocation_ledger.adapters.eventstore import AUDIT, CREATE_LEDGER, EventStore
from allocation_ledger.adapters.postgres import OneTripApplicationRecorder
from allocation_ledger.application.ledger import Ledger
from allocation_ledger.application.policy import WritePolicy
from allocation_ledger.config import CONNINFO, StoreConfig, parse_url

if TYPE_CHECKING:
    from allocation_ledger.projections.readmodels import ReadModels

from allocation_ledger.domain.errors import StoreNotFound, StoreUnavailable, StoreUnusable

#: What a store's drivers raise when it cannot be opened or reached: the boundary turns
#: these into :class:`StoreUnavailable` (and the command line into one line, exit 1).
STORE_FAILURES = (PersistenceError, psycopg.Error, sqlite3.Error, OSError)


def is_store_failure(err: BaseException) -> bool:
    """True for a driver's or SQLAlchemy's (the read side's) database error, or an OS error
    (SQLAlchemy is not imported for this: only the read side loads it)."""
    alchemy = sys.modules.get("sqlalchemy.exc")
    return isinstance(err, STORE_FAILURES) or (
        alchemy is not None and isinstance(err, alchemy.SQLAlchemyError))


def open_store(url: str | None = None, *, create: bool = True, read_only: bool = False,
               audit: bool = False) -> tuple[EventStore, StoreConfig]:
    """The event store a URL names (see :mod:`allocation_ledger.config`); its tables are
    created on first use (nothing is created where they exist), unless ``create`` is false
    (reads: :class:`StoreNotFound` when there is no ledger there, and nothing is created).
    ``read_only`` (implies ``create=False``): a SQLite file is opened so that nothing can
    be written to it or beside it, so a user who may only read it can (audits, history).
    ``audit`` (implies ``read_only``): a chain key set for a ledger that reads unkeyed is
    not refused but marked (``store.recorder.chain_downgraded``) for the audit to report.
    :class:`StoreUnavailable` when it cannot be opened or reached; :class:`StoreUnusable`
    for a corrupt SQLite file, a ledger not yet migrated to the hash chain, or a chain key
    not the ledger's."""
    config = parse_url(url)
    read_only = read_only or audit
    if not create or read_only:
        _check_file(config)
        reading = {"CREATE_TABLE": "n", CREATE_LEDGER: "n", AUDIT: "y" if audit else "n"}
        if read_only and config.kind == "sqlite":
            reading[sqlite_adapter.READ_ONLY] = "y"
        config = StoreConfig(config.url, config.kind, {**config.env, **reading})
    try:
        with _schema_lock(config):
            store = EventStore(env=config.env)
    except sqlite3.DatabaseError as err:  # damaged past what quick_check could read
        raise StoreUnusable(f"the SQLite file {config.env.get('SQLITE_DBNAME')} is "
                            f"corrupt ({err}): restore it from a backup") from err
    except STORE_FAILURES as err:
        raise StoreUnavailable(config.redacted_url, one_line(err)) from err
    if not create or read_only:
        _check_tables(store, config)
    return store, config


def one_line(err: BaseException) -> str:
    """An error's message on one line (drivers' messages often span several); for an error
    SQLAlchemy wrapped, the driver's own message (without the statement and the link
    SQLAlchemy adds)."""
    err = getattr(err, "orig", None) or err
    text = "; ".join(line.strip() for line in str(err).splitlines() if line.strip())
    return text or type(err).__name__


def _check_file(config: StoreConfig) -> None:
    """A SQLite ledger to read must be an existing file (connecting would create it)."""
    if config.kind != "sqlite":
        return
    path = config.env["SQLITE_DBNAME"]
    if path == ":memory:" or path.startswith("file:"):
        return
    if not os.path.exists(path):
        raise StoreNotFound(config.redacted_url, f"{path} does not exist")
    if not os.path.isfile(path):
        raise StoreNotFound(config.redacted_url, f"{path} is not a file")


def _check_tables(store: EventStore, config: StoreConfig) -> None:
    """The ledger's tables must be there (they are not created for a read)."""
    if config.kind == "memory":
        return
    try:
        store.recorder.max_notification_id()
    except STORE_FAILURES as err:
        store.close()
        if "no such table" in str(err) or "does not exist" in str(err):
            raise StoreNotFound(config.redacted_url, "it has no ledger tables") from err
        raise StoreUnavailable(config.redacted_url, one_line(err)) from err
    verify = getattr(store.recorder, "verify", None)  # SQLite: what opening it checks
    if verify is not None:
        try:
            verify()
        except BaseException:
            store.close()
            raise


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
    """The read models' tables beside the ledger."""
    from allocation_ledger.projections.store import open_engine

    open_engine(store.env).dispose()


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
    with psycopg.connect(env[CONNINFO], autocommit=True, connect_timeout=10) as conn:
        conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (key,))
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (key,))


def open_ledger(
    url: str | None = None, *, read_side: bool = False, projections_url: str | None = None,
    create: bool = True,
    group_commit: bool = False,
    policy: WritePolicy | None = None,
    read_only: bool = False,
) -> Ledger:
    """A :class:`Ledger` over the store ``url`` names: the argument, else ``$LEDGER_URL``,
    else ``sqlite:///ledger.db`` in the working directory.

    With ``read_side`` its projections are plugged in as ``ledger.reads`` (kept in the
    ledger's own database, or in ``projections_url``). With ``create=False`` (readers) a
    store without a ledger is :class:`StoreNotFound` and nothing is created. With
    ``group_commit`` the commands its threads send together share appends (see
    ``application/grouping.py``). ``policy``: what a command's first attempt may take from
    the process's cache and how clashes on hosts are retried (the default
    :class:`~allocation_ledger.application.policy.WritePolicy` unless given).
    ``read_only``: for reads only, by a user who may not write the store (see
    :func:`open_store`).
    """
    store, _ = open_store(url, create=create, read_only=read_only)
    ledger = Ledger(store, policy=policy or WritePolicy(), group_commit=group_commit)
    if read_side:
        from allocation_ledger.projections.readmodels import ReadModels
        from allocation_ledger.projections.service import ProjectedReadSide

        ledger.read_side = ProjectedReadSide(ReadModels.of(ledger, projections_url))
    return ledger


def open_read_models(ledger_url: str | None = None, url: str | None = None,
                     names: Iterable[str] | None = None, *, create: bool = True) -> ReadModels:
    """Open the ledger at ``ledger_url``, which must exist, and its read models (all, or
    those ``names``), kept in its own database or in ``url``; their tables are created
    unless ``create`` is false. Closing them closes the ledger's store."""
    from allocation_ledger.projections.readmodels import ReadModels
    from allocation_ledger.projections.store import open_engine

    store, _ = open_store(ledger_url, create=False, read_only=not create)
    try:
        engine = open_engine(store.env, url, create=create)
    except BaseException:
        store.close()
        raise
    return ReadModels(store, engine, names, owns_store=True)
