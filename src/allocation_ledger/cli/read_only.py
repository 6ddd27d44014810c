"""The store a read-only command works on, and how it names things: ``--url`` opened and
closed, and UUIDs or unique UUID prefixes resolved against the ledger's catalogue."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from allocation_ledger.adapters.eventstore import EventStore


@contextmanager
def store_of(args: argparse.Namespace, *, audit: bool = False) -> Iterator[EventStore]:
    """The event store ``--url`` names (which must hold a ledger: a read creates nothing,
    and a SQLite file is opened read-only, for a user who may only read it), closed
    afterwards; ``audit``: opened for the audit (see ``bootstrap.open_store``)."""
    from allocation_ledger.bootstrap import open_store

    store, _ = open_store(args.url, read_only=True, audit=audit)
    try:
        yield store
    finally:
        store.close()


def resolve_id(store: EventStore, kind: str, text: str) -> str:
    """The full UUID of the provider, consumer or migration that ``text`` names, by its
    UUID or a unique prefix of it (as the tables print them)."""
    from allocation_ledger.application import catalog

    if len(text.strip()) == 36:
        return text.strip().lower()
    known: Iterable[str]
    if kind == "provider":
        known = catalog.providers(store)
    elif kind == "migration":
        known = catalog.migrations(store)
    else:
        known = catalog.consumers(store)
    return catalog.resolve(kind, text, known)
