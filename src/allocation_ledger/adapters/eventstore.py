"""The event store: an ``eventsourcing`` application configured for the ledger.

The library provides the store (in-memory, SQLite or PostgreSQL), the unique
(stream, version) key that enforces generations, atomic multi-stream appends, snapshots and
the aggregate cache. This module only chooses its settings.
"""

from __future__ import annotations

from typing import ClassVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.domain import Aggregate

from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.provider import Provider

#: Snapshot every so many events, so a cold process never replays a long stream whole.
SNAPSHOT_INTERVAL = 200


class EventStore(Application[UUID]):
    """The ledger's event store. ``env`` carries the persistence settings (see ``config``)."""

    name = "Ledger"
    snapshotting_intervals: ClassVar[dict[type[Aggregate], int]] = {  # type: ignore[assignment]
        Provider: SNAPSHOT_INTERVAL,
        Consumer: SNAPSHOT_INTERVAL,
    }

    def get(self, stream_id: UUID | str) -> Aggregate | None:
        """The aggregate of a stream at its latest version, or ``None`` if there is none."""
        try:
            aggregate: Aggregate = self.repository.get(UUID(str(stream_id)))
        except AggregateNotFoundError:
            return None
        return aggregate

    def stream_version(self, stream_id: UUID) -> int | None:
        """The version of a stream's last event, read straight from the store."""
        last = self.recorder.select_events(stream_id, desc=True, limit=1)
        return last[0].originator_version if last else None
