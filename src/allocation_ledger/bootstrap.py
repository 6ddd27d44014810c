"""The composition root: the one place that wires configuration, store and service."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.application.commands import CONNECTION_ERRORS
from allocation_ledger.application.ledger import Ledger
from allocation_ledger.config import SESSION_ATTRS_KEY, StoreConfig, parse_url
from allocation_ledger.domain.errors import StoreUnavailable


def open_store(url: str | None = None) -> tuple[EventStore, StoreConfig]:
    """The event store a URL names (see :mod:`allocation_ledger.config`); schema created on
    first use."""
    config = parse_url(url)
    try:
        with _schema_lock(config):
            return EventStore(env=config.env), config
    except CONNECTION_ERRORS as err:  # a store out of reach is the caller's to retry
        raise StoreUnavailable(None, f"{type(err).__name__}: {err}".strip()) from err


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
        target_session_attrs=env.get(SESSION_ATTRS_KEY) or "any",
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
