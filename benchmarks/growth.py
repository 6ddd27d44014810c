"""Growing a ledger fast, with valid history, for the cost-of-history figure.

The growth is real domain decisions (``claims.write`` and ``claims.release``) over a
workspace held in memory, appended in large batches, each command's events in the order the
service appends them and stamped with a command id of its own, through the store's own
``append`` (so the store takes its snapshots as it always does and an audit or a rebuild
finds every command's end). Each cycle is an instance that
claims on one host and is released again: four events, two of them on the host's stream, so
the host's stream becomes as long as half the ledger, the worst case for a claim on it. Usage
returns to where it was after each cycle, so every invariant holds at every position.

Only use it on a ledger nobody else writes to while it grows.
"""

from __future__ import annotations

from allocation_ledger.application.ledger import Ledger
from allocation_ledger.domain import claims
from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.errors import MigrationNotFound, ProviderNotFound
from allocation_ledger.domain.ids import provider_stream_id
from allocation_ledger.domain.migration import Migration
from allocation_ledger.domain.provider import Provider
from benchmarks.workload import FLAVOUR, PROJECT, USER, new_id

EVENTS_PER_CYCLE = 4
CYCLES_PER_APPEND = 2_500
REQUEST = {"actor": "bench", "reason": "allocation-ledger bench: history growth"}


class MemoryWorkspace:
    """The domain's ``Workspace`` over aggregates held in memory (one writer, no store)."""

    def __init__(self, providers: dict[str, Provider]) -> None:
        self.providers = providers
        self.consumers: dict[str, Consumer] = {}

    def provider(self, provider_uuid: str) -> Provider:
        """The provider, which must be one of those given."""
        try:
            return self.providers[provider_uuid]
        except KeyError:
            raise ProviderNotFound(provider_uuid) from None

    def consumer(self, consumer_uuid: str) -> Consumer | None:
        """A consumer created in this workspace, else ``None``."""
        return self.consumers.get(consumer_uuid)

    def migration(self, migration_uuid: str) -> Migration:
        """Growth makes no moves."""
        raise MigrationNotFound(migration_uuid)

    def add(self, aggregate: Consumer | Provider) -> None:
        """Keep a new consumer until the next append."""
        if isinstance(aggregate, Consumer):
            self.consumers[aggregate.uuid] = aggregate


def ledger_size(ledger: Ledger) -> int:
    """How many events the ledger holds (its last notification id)."""
    return ledger.store.recorder.max_notification_id() or 0


def grow(ledger: Ledger, host: str, target_events: int) -> int:
    """Append claim-and-release cycles on ``host`` until the ledger holds at least
    ``target_events`` events; returns the ledger's size afterwards."""
    size = ledger_size(ledger)
    found = ledger.store.get(provider_stream_id(host))
    if not isinstance(found, Provider):
        raise ProviderNotFound(host)
    workspace = MemoryWorkspace({host: found})
    while size < target_events:
        cycles = min(CYCLES_PER_APPEND, -(-(target_events - size) // EVENTS_PER_CYCLE))
        events: list[object] = []
        for _ in range(cycles):
            consumer = new_id()
            write = claims.ConsumerWrite(consumer, {host: dict(FLAVOUR)}, None, PROJECT, USER)
            claims.write(workspace, [write], {**REQUEST, "command_id": new_id()})
            instance = workspace.consumers[consumer]
            # each command's events as the service appends them: new streams, then
            # providers, then consumers
            events += [*instance.collect_events(), *found.collect_events()]
            claims.release(workspace, consumer, 1, {**REQUEST, "command_id": new_id()})
            events += [*found.collect_events(), *instance.collect_events()]
        ledger.store.append(events, [found, *workspace.consumers.values()])
        workspace.consumers.clear()
        size += cycles * EVENTS_PER_CYCLE
    return ledger_size(ledger)
