"""The consumer aggregate: one stream per consumer of resources (an instance, say).

The stream version is the consumer generation (a migration's stream also records its move's
context, and those context events do not count: see ``migration``). The first write creates
the stream and leaves generation 1; every later write that names the consumer adds exactly
one event, so exactly 1 to the generation. A consumer holding nothing reads as absent
(generation ``None``) but keeps its stream, so its generation keeps counting up and never
goes back.

Every allocation-bearing event carries the consumer's whole new holding (allocations and
devices), so the appliers only assign, and any reader can take the latest event as the truth.
"""

from __future__ import annotations

from eventsourcing.domain import Aggregate

from allocation_ledger.domain.errors import ConsumerGenerationConflict
from allocation_ledger.domain.ids import consumer_stream_id
from allocation_ledger.domain.values import (
    Allocations,
    Devices,
    PlainState,
    RequestMeta,
    copy_allocations,
    copy_devices,
)

INSTANCE = "INSTANCE"
MIGRATION = "MIGRATION"
#: Placement's type of a consumer written without one (before microversion 1.38)
UNKNOWN = "unknown"



def generation_of(named_writes: int, *, holds: bool) -> int | None:
    """A consumer's generation: the number of writes that named it, ``None`` while it holds
    nothing (guarantees §3). The one rule; read models derive theirs with it."""
    return named_writes if holds else None

class Consumer(PlainState, Aggregate):
    """A consumer of resources: what it holds, on which providers, with which devices."""

    class Event(Aggregate.Event):
        """Base of every consumer event; ``request`` says who asked and why."""

        request: RequestMeta

    class Created(Event, Aggregate.Created):
        """The consumer's first write: its identity and what it took."""

        consumer_uuid: str
        project_id: str
        user_id: str
        consumer_type: str
        allocations: Allocations
        devices: Devices

    class AllocationsSet(Event):
        """Base of the events that give the consumer a whole new holding."""

        allocations: Allocations
        devices: Devices

        def apply(self, aggregate: Consumer) -> None:
            aggregate.allocations = copy_allocations(self.allocations)
            aggregate.devices = copy_devices(self.devices)

    class AllocationsClaimed(AllocationsSet):
        """The consumer's allocations were replaced by a claim (or a multi-consumer write);
        its project, user and type are the ones that write gave, as Placement updates them."""

        project_id: str
        user_id: str
        consumer_type: str

        def apply(self, aggregate: Consumer) -> None:
            super().apply(aggregate)
            aggregate.project_id = self.project_id
            aggregate.user_id = self.user_id
            aggregate.consumer_type = self.consumer_type

    class AllocationsReleased(AllocationsSet):
        """The consumer's allocations were removed (``forced``: the generation was ignored)."""

        forced: bool

    class AllocationsHandedOver(AllocationsSet):
        """Swap: the consumer's allocations went to the migration ``migration_uuid``; what is
        left (empty, or the destination for a combined or forced move) is the new holding."""

        migration_uuid: str

        def apply(self, aggregate: Consumer) -> None:
            super().apply(aggregate)
            aggregate.migration_uuid = self.migration_uuid

    class AllocationsReturned(AllocationsSet):
        """Revert: the source allocations came back from migration ``migration_uuid``."""

        migration_uuid: str

    class EvacuationStarted(AllocationsSet):
        """Evacuation: the consumer now holds its source and its destination at once."""

        migration_uuid: str

        def apply(self, aggregate: Consumer) -> None:
            super().apply(aggregate)
            aggregate.migration_uuid = self.migration_uuid

    class EvacuationSourceRemoved(AllocationsSet):
        """Evacuation finished: the source host was cleaned up; only the destination is left."""

        migration_uuid: str

    def __init__(
        self,
        consumer_uuid: str,
        project_id: str,
        user_id: str,
        consumer_type: str,
        allocations: Allocations,
        devices: Devices,
    ) -> None:
        self.uuid = consumer_uuid
        self.project_id = project_id
        self.user_id = user_id
        self.consumer_type = consumer_type
        self.allocations = copy_allocations(allocations)
        self.devices = copy_devices(devices)
        #: the last migration this consumer started (its status says if it is in flight)
        self.migration_uuid: str | None = None

    @classmethod
    def create(
        cls,
        consumer_uuid: str,
        project_id: str,
        user_id: str,
        consumer_type: str,
        allocations: Allocations,
        devices: Devices,
        request: RequestMeta,
    ) -> Consumer:
        """The consumer's first write."""
        return cls._create(
            cls.Created,
            id=consumer_stream_id(consumer_uuid),
            consumer_uuid=consumer_uuid,
            project_id=project_id,
            user_id=user_id,
            consumer_type=consumer_type,
            allocations=copy_allocations(allocations),
            devices=copy_devices(devices),
            request=request,
        )

    @property
    def named_writes(self) -> int:
        """How many writes named this consumer: its stream version (a migration's stream
        also holds context events, which do not count)."""
        return self.version

    @property
    def generation(self) -> int | None:
        """The consumer generation: the writes that named it, ``None`` when it holds nothing."""
        return generation_of(self.named_writes, holds=bool(self.allocations))

    def set_holding(
        self,
        event_class: type[Consumer.AllocationsSet],
        allocations: Allocations,
        devices: Devices,
        request: RequestMeta,
        **fields: object,
    ) -> None:
        """Give the consumer a whole new holding through one event of ``event_class``."""
        self.trigger_event(
            event_class,
            allocations=copy_allocations(allocations),
            devices=copy_devices(devices),
            request=request,
            **fields,
        )


def check_generation(
    consumer_uuid: str, consumer: Consumer | None, expected: int | None
) -> None:
    """Raise :class:`ConsumerGenerationConflict` unless ``expected`` matches.

    ``None`` is expected of an absent or emptied consumer; a number of one that holds
    allocations, and it must be that consumer's current generation.
    """
    actual = consumer.generation if consumer is not None else None
    if actual != expected:
        raise ConsumerGenerationConflict(consumer_uuid, expected, actual)
