"""Point-in-time questions: what did a provider, a consumer, a migration or every host look
like at a ledger position, or at a moment?

A moment is turned into a position first (the last event recorded at or before it), so
"at 10:00" and "at position 1234" mean the same kind of cut: a prefix of the ledger. The
answers are the service's own read views, built from aggregates replayed to that cut.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar
from uuid import UUID

from eventsourcing.utils import TopicError

from allocation_ledger.adapters.decoding import Decoder
from allocation_ledger.adapters.eventstore import EventStore, project
from allocation_ledger.adapters.positions import position_of
from allocation_ledger.application.inputs import canonical_uuid
from allocation_ledger.application.views import ConsumerView, MigrationView, ProviderView
from allocation_ledger.audit.ledger_events import (
    as_uuid,
    decode,
    entries,
    last_position,
    notifications,
    position_at,
)
from allocation_ledger.audit.state import LedgerState
from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.errors import (
    ConsumerNotFound,
    InvalidRequest,
    MigrationNotFound,
    ProviderNotFound,
)
from allocation_ledger.domain.ids import consumer_stream_id, provider_stream_id
from allocation_ledger.domain.migration import Migration
from allocation_ledger.domain.provider import Provider

V = TypeVar("V")
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class AsOf(Generic[V]):
    """An answer and the cut it holds for: ``position`` and the time of that event."""

    position: int
    time: datetime | None
    value: V


def cut(store: EventStore, position: int | None = None, when: datetime | None = None) -> int:
    """The ledger position a question is asked at: ``position``, else the last event at or
    before ``when``, else the newest event."""
    if position is not None and when is not None:
        raise InvalidRequest("ask at a position or at a time, not both")
    if position is not None:
        if position < 0:
            raise InvalidRequest(f"a position is 0 or more, got {position}", position=position)
        return position
    if when is not None:
        if when.tzinfo is None:
            raise InvalidRequest(f"time {when.isoformat()} needs a timezone", time=str(when))
        return position_at(store, when)
    return last_position(store)


def replay(store: EventStore, stop: int | None = None,
           progress: Progress | None = None, *, every_consumer: bool = False) -> LedgerState:
    """Every provider, and every consumer that holds something or is a migration in flight
    (``every_consumer``: all of them), as of position ``stop`` (the whole ledger when
    ``None``)."""
    state = LedgerState(revive=None if every_consumer else reviver(store))
    end = stop if stop is not None else last_position(store)
    for count, entry in enumerate(entries(store, 1, stop), 1):
        if entry.event is not None:
            state.apply(entry.position, entry.event)
            state.settle(entry.event.originator_id)
        if progress is not None and count % 2000 == 0:
            progress(entry.position, end)
    if progress is not None:
        progress(end, end)
    return state


def reviver(store: EventStore) -> Callable[[UUID, int, int], Any]:
    """Reads a stream's aggregate back from its events before a version, if the store holds
    its creation before a position (``None`` when it does not, or they cannot be read: the
    replay then reports the event it was asked for)."""

    def revive(stream: UUID, version: int, position: int) -> Any:
        created = position_of(store.recorder, stream, 1)
        if created is None or created >= position:
            return None
        try:
            return project(None, store.events.get(stream, lte=version - 1))
        except (TopicError, ImportError, AttributeError, ValueError, TypeError, KeyError,
                AssertionError):  # the library asserts a first event creates the stream
            return None

    return revive


def stream_at(store: EventStore, stream: UUID, position: int) -> AsOf[Any]:
    """One stream's aggregate as of ``position`` (``None`` if not yet created). Reads the
    ledger's raw notifications up to the cut but decodes only that stream's events."""
    state = LedgerState()
    last = None
    decoder = Decoder(store.mapper)
    for notification in notifications(store, 1, position):
        last = notification
        if as_uuid(notification.originator_id) == stream:
            event = decode(store, notification, decoder).event
            if event is not None:
                state.apply(notification.id, event)
    time = decode(store, last, decoder).time if last is not None else None
    return AsOf(last.id if last is not None else 0, time, state.aggregates.get(stream))


def provider_at(store: EventStore, provider_uuid: str, position: int) -> AsOf[ProviderView]:
    """A provider's inventory, usage and devices at ``position``."""
    found = stream_at(store, provider_stream_id(canonical_uuid(provider_uuid)), position)
    if not isinstance(found.value, Provider):
        raise ProviderNotFound(provider_uuid)
    return AsOf(found.position, found.time, ProviderView.of(found.value))


def consumer_at(store: EventStore, consumer_uuid: str, position: int) -> AsOf[ConsumerView]:
    """A consumer's allocations, devices and generation at ``position`` (generation
    ``None`` when it held nothing then)."""
    consumer_uuid = canonical_uuid(consumer_uuid)
    found = stream_at(store, consumer_stream_id(consumer_uuid), position)
    consumer = found.value
    if consumer is not None and not isinstance(consumer, Consumer):
        raise ConsumerNotFound(consumer_uuid)
    moving: str | None = None
    if consumer is not None and consumer.migration_uuid is not None:
        migration = stream_at(store, consumer_stream_id(consumer.migration_uuid), position)
        if isinstance(migration.value, Migration) and migration.value.in_flight:
            moving = migration.value.uuid
    return AsOf(found.position, found.time, ConsumerView.of(consumer_uuid, consumer, moving))


def migration_at(store: EventStore, migration_uuid: str, position: int) -> AsOf[MigrationView]:
    """A migration's context and status at ``position``."""
    migration_uuid = canonical_uuid(migration_uuid)
    found = stream_at(store, consumer_stream_id(migration_uuid), position)
    if not isinstance(found.value, Migration):
        raise MigrationNotFound(migration_uuid)
    return AsOf(found.position, found.time, MigrationView.of(found.value))


def hosts_at(store: EventStore, position: int,
             progress: Progress | None = None) -> AsOf[dict[str, dict[str, ProviderView]]]:
    """Every live host (root provider) and the providers of its tree, with their usage."""
    state = replay(store, position, progress)
    hosts: dict[str, dict[str, ProviderView]] = {}
    for uuid, provider in sorted(state.providers.items()):
        if not provider.deleted:
            hosts.setdefault(provider.root_uuid, {})[uuid] = ProviderView.of(provider)
    return AsOf(state.position, state.time, hosts)
