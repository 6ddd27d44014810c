"""Where allocation candidates come from: a snapshot of every live provider, read from the
ledger's own streams, handed to the pure search (``domain/candidates.py``).

Providers are listed from their registrations and deletions (``catalog.providers``) and
loaded in one batch (``EventStore.get_short_many``), so an answer reflects every write the
store has committed, through any process.
"""

from __future__ import annotations

from typing import Any

from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.application import catalog
from allocation_ledger.domain.candidates import search
from allocation_ledger.domain.candidates_request import (
    Candidates,
    CandidatesRequest,
    ProviderSnapshot,
)
from allocation_ledger.domain.ids import provider_stream_id
from allocation_ledger.domain.provider import Provider
from allocation_ledger.domain.values import Inventory, is_valid_resource_class


def allocation_candidates(store: EventStore, request: CandidatesRequest) -> Candidates:
    """The candidates for ``request`` over every live provider of ``store``."""
    return search(provider_snapshots(store), request,
                  class_exists=is_valid_resource_class, trait_exists=trait_exists)


def provider_snapshots(store: EventStore) -> list[ProviderSnapshot]:
    """Every live provider, in order of registration."""
    entries = catalog.providers(store)
    loaded = store.get_short_many(provider_stream_id(u) for u in entries)
    found = [p for p in loaded.values() if isinstance(p, Provider) and not p.deleted]
    return [snapshot(p) for p in found]


def snapshot(p: Provider) -> ProviderSnapshot:
    """One provider aggregate as the candidates search sees it."""
    traits, aggregates = traits_and_aggregates(p)
    return ProviderSnapshot(
        uuid=p.uuid, name=p.name, parent_uuid=p.parent_uuid, root_uuid=p.root_uuid,
        generation=p.version,
        inventories={rc: Inventory.from_dict(v) for rc, v in p.inventories.items()},
        usages={rc: n for rc, n in p.usages.items() if n},
        traits=traits, aggregates=aggregates)


def traits_and_aggregates(p: Provider) -> tuple[frozenset[str], frozenset[str]]:
    """The provider's traits and aggregates. The Provider aggregate gains ``traits`` and
    ``aggregates`` (sorted lists) with the traits/aggregates commands; until it has them a
    provider has neither, and this is the one place that reads them."""
    found: Any = p
    return (frozenset(getattr(found, "traits", ()) or ()),
            frozenset(getattr(found, "aggregates", ()) or ()))


def trait_exists(name: str) -> bool:
    """Whether a trait exists. The ledger does not keep the trait catalogue yet, so every
    name is taken as existing (no 400 ``No such trait(s)`` from the server); the search
    refuses unknown names as Placement does once this answers from the catalogue."""
    return bool(name)
