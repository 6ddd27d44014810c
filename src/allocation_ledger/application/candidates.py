"""Where allocation candidates come from: every live provider, read from the ledger's own
streams, handed to the pure search (``domain/candidates.py``).

:class:`CandidatesSource` keeps an index of provider snapshots in memory and, before each
answer, follows the store's notification log from where it last stopped: the providers whose
streams have new events (or were just registered) are loaded again, and only they. So an
answer reflects every write the store had committed when it was asked, through any process
(PostgreSQL commits notification ids in the order they are given, under the append's table
lock; SQLite has one writer), and costs the search plus the new events, not a load of the
whole cloud. The first answer loads every provider (``catalog.providers`` and one
``get_many``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any
from uuid import UUID

from eventsourcing.utils import get_topic

from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.application import catalog
from allocation_ledger.domain.candidates import search_index
from allocation_ledger.domain.candidates_index import CloudIndex
from allocation_ledger.domain.candidates_request import (
    Candidates,
    CandidatesRequest,
    ProviderSnapshot,
)
from allocation_ledger.domain.ids import provider_stream_id
from allocation_ledger.domain.provider import Provider
from allocation_ledger.domain.values import Inventory, is_valid_resource_class

BATCH = 5000
REGISTERED = frozenset({get_topic(Provider.Registered), get_topic(Provider.Reregistered)})


class CandidatesSource:
    """Answers candidates requests over an in-memory index of the store's providers, brought
    up to date with the store's notification log before each answer. Safe to share between
    threads: one answer at a time (catching up changes the index the search reads)."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._index: CloudIndex | None = None
        self._position = 0
        self._streams: dict[UUID | str, str] = {}  # provider stream -> provider uuid

    def answer(self, request: CandidatesRequest,
               trait_exists: Callable[[str], bool]) -> Candidates:
        """The candidates for ``request`` as the store stands now; ``trait_exists`` says
        whether a trait the request names exists."""
        with self._lock:
            index = self._caught_up()
            return search_index(index, request, class_exists=is_valid_resource_class,
                                trait_exists=trait_exists)

    def _caught_up(self) -> CloudIndex:
        # the position is taken before the loads and kept only once they succeed: what
        # commits meanwhile is read again next time (loading a stream again is harmless)
        if self._index is None:
            position = self.store.recorder.max_notification_id() or 0
            index = CloudIndex()
            self._load(index, [provider_stream_id(u) for u in catalog.providers(self.store)])
            self._index, self._position = index, position
            return index
        changed: dict[UUID | str, None] = {}
        start = self._position + 1
        while found := self.store.recorder.select_notifications(start, BATCH):
            for n in found:
                if n.originator_id in self._streams or n.topic in REGISTERED:
                    changed[n.originator_id] = None
            start = found[-1].id + 1
        if changed:
            self._load(self._index, list(changed))
        self._position = start - 1
        return self._index

    def _load(self, index: CloudIndex, streams: list[Any]) -> None:
        loaded = self.store.get_many(streams)
        live = []
        for stream, p in loaded.items():
            if not isinstance(p, Provider):
                continue
            if p.deleted:
                index.drop(p.uuid)  # deletions first: a UUID registered again stays
                self._streams.pop(stream, None)
            else:
                live.append((stream, p))
        for stream, p in live:
            index.put(snapshot(p))
            self._streams[stream] = p.uuid


def snapshot(p: Provider) -> ProviderSnapshot:
    """One provider aggregate as the candidates search sees it."""
    return ProviderSnapshot(
        uuid=p.uuid, name=p.name, parent_uuid=p.parent_uuid, root_uuid=p.root_uuid,
        generation=p.version,
        inventories={rc: Inventory.from_dict(v) for rc, v in p.inventories.items()},
        usages={rc: n for rc, n in p.usages.items() if n},
        traits=frozenset(p.traits), aggregates=frozenset(p.aggregates))

