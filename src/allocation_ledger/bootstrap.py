"""The composition root: the one place that wires configuration, store and service."""

from __future__ import annotations

from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.application.ledger import Ledger
from allocation_ledger.config import StoreConfig, parse_url


def open_store(url: str | None = None) -> tuple[EventStore, StoreConfig]:
    """The event store a URL names (see :mod:`allocation_ledger.config`); schema created on
    first use."""
    config = parse_url(url)
    return EventStore(env=config.env), config


def open_ledger(url: str | None = None) -> Ledger:
    """A :class:`Ledger` over the store ``url`` names: the argument, else ``$LEDGER_URL``,
    else ``sqlite:///ledger.db`` in the working directory."""
    store, _ = open_store(url)
    return Ledger(store)
