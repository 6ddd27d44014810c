"""What the audit asks the store itself: its chain's facts and its own integrity check."""

from __future__ import annotations

from typing import Any

from allocation_ledger.adapters import chain
from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.adapters.notifications import chained
from allocation_ledger.audit import findings as f
from allocation_ledger.audit.findings import Finding, Where


def chain_before(store: EventStore, start: int) -> bytes:
    """The stored chain hash of the last event before ``start`` (the genesis for 1)."""
    if start <= 1 or not chained(store):
        return chain.GENESIS
    recorder: Any = store.recorder
    found: bytes | None = recorder.chain_hash_before(start)
    return found or chain.GENESIS


def chain_notes(store: EventStore) -> list[str]:
    """How far the chain vouches: a ledger migrated to it is chained from then on."""
    if not chained(store):
        return []
    recorder: Any = store.recorder
    _, migrated_at, up_to = recorder.chain_facts()
    if migrated_at is None:
        return []
    return [f"the chain over positions up to #{up_to} was computed by the migration of "
            f"{migrated_at}: it proves them unchanged since then, not before"]


def downgraded(store: EventStore) -> list[Finding]:
    """A finding when the audit was given a chain key and the ledger's chain reads unkeyed
    (``chain.check_key``): if it was created keyed, someone with the table rewrote it."""
    if not getattr(store.recorder, "chain_downgraded", False):
        return []
    return [Finding.at(Where(0), f.CHAIN_DOWNGRADED,
                       "a chain key is set, but the ledger's hash chain reads unkeyed: a ledger "
                       "created keyed had its chain recomputed without the key, and the chain "
                       "vouches for nothing (were it never keyed, audit it without the key)")]


def store_integrity(store: EventStore) -> list[Finding]:
    """The database's own integrity check (SQLite's ``PRAGMA integrity_check``)."""
    check = getattr(store.recorder, "integrity_problems", None)
    if check is None:
        return []
    return [Finding.at(Where(0), f.INTEGRITY, f"the database file is damaged: {problem}")
            for problem in check()]



__all__ = ["chain_before", "chain_notes", "chained", "downgraded", "store_integrity"]
