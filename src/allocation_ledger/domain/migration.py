"""The migration aggregate: a consumer that also carries a move's context.

A migration record is a consumer of its own (type ``MIGRATION``): during a resize, cold or
live migration it holds the instance's source allocation and devices while the instance
claims its destination, exactly as Nova's migration-based allocations do. An evacuation's
record holds nothing (the instance holds source and destination itself) but carries the
context all the same. A migration resolves at most once.

The context's own records (the instance claimed or gave up its destination) are events in the
migration's stream, but they are written by commands that name the instance, not the
migration, so they are *context events*: they do not count in the migration's consumer
generation (guarantees §3: only a write that names the consumer adds 1). The generation is the
stream version less the context events the stream holds.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import cast

from allocation_ledger.domain.consumer import MIGRATION, Consumer
from allocation_ledger.domain.errors import InvalidRequest, InvalidTransition
from allocation_ledger.domain.ids import consumer_stream_id
from allocation_ledger.domain.values import (
    Allocations,
    Devices,
    RequestMeta,
    copy_allocations,
    copy_devices,
)

RESIZE = "resize"
COLD_MIGRATION = "migration"
LIVE_MIGRATION = "live-migration"
EVACUATION = "evacuation"
KINDS = (RESIZE, COLD_MIGRATION, LIVE_MIGRATION, EVACUATION)

IN_PROGRESS = "in-progress"
CONFIRMED = "confirmed"
REVERTED = "reverted"
COMPLETED = "completed"
ABORTED = "aborted"



#: The largest age a move is asked about (ten years): dates that far back stay in range.
MAX_AGE_SECONDS = 10 * 365 * 24 * 3600


def check_age(older_than_seconds: float) -> float:
    """``older_than_seconds`` if it is an age a move can have (0 up to
    :data:`MAX_AGE_SECONDS`); :class:`InvalidRequest` for a negative, larger, infinite or
    NaN one (ten years back is far enough, and beyond it date arithmetic overflows)."""
    if not 0 <= older_than_seconds <= MAX_AGE_SECONDS:  # False for NaN too
        raise InvalidRequest(
            f"an age must be from 0 to {MAX_AGE_SECONDS} seconds (ten years), got "
            f"{older_than_seconds!r}", older_than_seconds=repr(older_than_seconds))
    return older_than_seconds


def started_by(now: datetime, older_than_seconds: float) -> datetime:
    """The latest start of a move that has been in flight for at least
    ``older_than_seconds`` at ``now``: a move in flight that started at or before it is
    stale (the allocations Nova leaks when nobody confirms or reverts). The one rule: the
    service API, the read side's query and the audit all use it (:func:`check_age`)."""
    return now - timedelta(seconds=check_age(older_than_seconds))

class Migration(Consumer):
    """A move in flight (or resolved): the migration consumer and its context."""

    #: the class default keeps any aggregate restored without ``__init__`` readable; a
    #: migration is never snapshotted (see ``adapters.eventstore``), so replay sets it
    context_events: int = 0

    class Started(Consumer.Created):
        """A move started: the migration took ``allocations`` (the instance's source, or
        nothing for an evacuation) and its context opened."""

        instance_uuid: str
        kind: str
        source_root: str
        destination_root: str | None
        old_allocations: Allocations
        old_devices: Devices
        new_allocations: Allocations
        new_devices: Devices

    class ContextEvent(Consumer.Event):
        """Base of the context events: written for the instance, not counted in the
        migration's generation."""

        def apply(self, aggregate: Migration) -> None:
            aggregate.context_events += 1

    class DestinationClaimed(ContextEvent):
        """The instance claimed its destination; the context records it."""

        destination_root: str
        new_allocations: Allocations
        new_devices: Devices

        def apply(self, aggregate: Migration) -> None:
            super().apply(aggregate)
            aggregate.destination_root = self.destination_root
            aggregate.new_allocations = copy_allocations(self.new_allocations)
            aggregate.new_devices = copy_devices(self.new_devices)

    class DestinationRemoved(ContextEvent):
        """The instance gave up its destination (Nova cleaning up a host that failed); the
        move stays open with the migration holding the source, for a new destination claim
        or a revert."""

        def apply(self, aggregate: Migration) -> None:
            super().apply(aggregate)
            aggregate.destination_root = None
            aggregate.new_allocations = {}
            aggregate.new_devices = {}

    class Resolved(Consumer.AllocationsSet):
        """Base of the events that end a migration; it then holds nothing."""

        status: str

        def apply(self, aggregate: Consumer) -> None:
            super().apply(aggregate)
            migration = cast(Migration, aggregate)
            migration.status = self.status
            migration.finished_at = self.timestamp

    class Confirmed(Resolved):
        """The move was confirmed: the source allocation and old devices were released."""

    class Reverted(Resolved):
        """The move was reverted: the source allocation and old devices went back to the
        instance and its destination was released."""

    class Completed(Resolved):
        """An evacuation's source host was cleaned up; the move is done."""

    class Aborted(Resolved):
        """The instance was deleted mid-move; everything both held was released."""

    def __init__(
        self,
        consumer_uuid: str,
        project_id: str,
        user_id: str,
        consumer_type: str,
        allocations: Allocations,
        devices: Devices,
        instance_uuid: str,
        kind: str,
        source_root: str,
        destination_root: str | None,
        old_allocations: Allocations,
        old_devices: Devices,
        new_allocations: Allocations,
        new_devices: Devices,
        timestamp: datetime,
    ) -> None:
        super().__init__(consumer_uuid, project_id, user_id, consumer_type, allocations, devices)
        self.instance_uuid = instance_uuid
        self.kind = kind
        self.source_root = source_root
        self.destination_root = destination_root
        self.old_allocations = copy_allocations(old_allocations)
        self.old_devices = copy_devices(old_devices)
        self.new_allocations = copy_allocations(new_allocations)
        self.new_devices = copy_devices(new_devices)
        self.status = IN_PROGRESS
        self.started_at = timestamp
        self.finished_at: datetime | None = None
        #: events of this stream that only record the context (not counted in the generation)
        self.context_events = 0

    @classmethod
    def start(
        cls,
        migration_uuid: str,
        instance: Consumer,
        kind: str,
        source_root: str,
        holding: tuple[Allocations, Devices],
        destination: tuple[str | None, Allocations, Devices],
        request: RequestMeta,
    ) -> Migration:
        """Open a migration for ``instance``: it takes ``holding`` and records the context."""
        allocations, devices = holding
        destination_root, new_allocations, new_devices = destination
        return cls._create(
            cls.Started,
            id=consumer_stream_id(migration_uuid),
            consumer_uuid=migration_uuid,
            project_id=instance.project_id,
            user_id=instance.user_id,
            consumer_type=MIGRATION,
            allocations=copy_allocations(allocations),
            devices=copy_devices(devices),
            instance_uuid=instance.uuid,
            kind=kind,
            source_root=source_root,
            destination_root=destination_root,
            old_allocations=copy_allocations(instance.allocations),
            old_devices=copy_devices(instance.devices),
            new_allocations=copy_allocations(new_allocations),
            new_devices=copy_devices(new_devices),
            request=request,
        )

    @property
    def named_writes(self) -> int:
        """The stream version less the context events: the writes that named the migration."""
        return self.version - self.context_events

    @property
    def in_flight(self) -> bool:
        """True until the migration is confirmed, reverted, completed or aborted."""
        return self.status == IN_PROGRESS

    def check_can(self, action: str, kinds: tuple[str, ...] = KINDS) -> None:
        """Raise :class:`InvalidTransition` unless ``action`` fits the status and kind."""
        if not self.in_flight:
            raise InvalidTransition(self.uuid, self.status, action)
        if self.kind not in kinds:
            raise InvalidTransition(self.uuid, f"{self.status} ({self.kind})", action)

    def record_destination(
        self, destination_root: str, allocations: Allocations, devices: Devices,
        request: RequestMeta,
    ) -> None:
        """Record the instance's destination claim in the context."""
        self.trigger_event(
            self.DestinationClaimed,
            destination_root=destination_root,
            new_allocations=copy_allocations(allocations),
            new_devices=copy_devices(devices),
            request=request,
        )

    def remove_destination(self, request: RequestMeta) -> None:
        """Record that the instance gave up its destination; the move stays open."""
        self.trigger_event(self.DestinationRemoved, request=request)

    def resolve(self, event_class: type[Migration.Resolved], status: str,
                request: RequestMeta) -> None:
        """End the migration with ``status``; it then holds nothing."""
        self.trigger_event(
            event_class, allocations={}, devices={}, status=status, request=request
        )
