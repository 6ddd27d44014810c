"""The ledger replayed in memory: every aggregate, rebuilt by its own domain appliers.

Replaying never decides anything: it hands each decoded event to the domain's ``mutate``
(appliers only assign), so what it rebuilds is exactly what the service would load. What
does not follow on its stream (a version gap, a second creation, an event for a stream that
was never created, an applier that fails on a malformed record) is reported as a problem
and replay goes on, so one bad record never hides the rest.

Memory holds the state, not the history: given a way to ``revive`` a stream from the store,
a consumer that holds nothing and is not a migration in flight is let go once its event
has been checked (:meth:`LedgerState.settle`), and so is a command record (a stream of one
event); either is read back from its own stream if a later event names it. A cloud's
history is mostly instances that came and went, and a record of every command; without
this the replay would keep every one of them. Nor does it remember which streams it let
go: ``revive`` reads a stream back only where the store holds its creation before the
event that names it (so an event before its stream's creation is still reported).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate

from allocation_ledger.domain.command import Command
from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.ids import (
    COMMAND_NAMESPACE,
    CONSUMER_NAMESPACE,
    PROVIDER_NAME_NAMESPACE,
    PROVIDER_NAMESPACE,
    RESOURCE_CLASS_NAMESPACE,
    TRAIT_NAMESPACE,
    uuid5,
    uuid5_number,
)
from allocation_ledger.domain.migration import Migration
from allocation_ledger.domain.provider import Provider
from allocation_ledger.domain.provider_name import ProviderName
from allocation_ledger.domain.resource_class import ResourceClass
from allocation_ledger.domain.trait import Trait

_LOOK_UP: Any = object()


@dataclass
class LedgerState:
    """Every provider and consumer as of ``position`` (0: nothing replayed yet)."""

    aggregates: dict[UUID, Aggregate] = field(default_factory=dict)
    providers: dict[str, Provider] = field(default_factory=dict)
    consumers: dict[str, Consumer] = field(default_factory=dict)
    #: how many command records (one stream each) were replayed
    commands: int = 0
    #: where each stream was created (for findings about a stream as a whole)
    created_at: dict[UUID, int] = field(default_factory=dict)
    position: int = 0
    time: datetime | None = None
    #: the aggregate of a stream from its events before a version, if the store holds its
    #: creation before a position (else ``None``: a stream the replay cannot have seen
    #: created is reported, never revived); given, emptied consumers and command records
    #: are let go and read back when named again
    revive: Callable[[UUID, int, int], Aggregate | None] | None = None

    def apply(self, position: int, event: Any) -> str | None:
        """Apply one event; a sentence describing what did not fit, else ``None``."""
        return self.apply_to(position, event, self.aggregates.get(event.originator_id))[0]

    def apply_to(self, position: int, event: Any,
                 aggregate: Aggregate | None) -> tuple[str | None, Aggregate | None]:
        """:meth:`apply`, given the event's stream as held now (``aggregates.get`` of its
        id), and returning besides what did not fit the stream as held after the event
        (a replay that checks each event looks its stream up once, not three times)."""
        self.position = position
        self.time = event.timestamp
        stream: UUID = event.originator_id
        created = creates(event)
        held = aggregate is not None  # else, as held after the event: in ``aggregates``
        try:
            if aggregate is None and self.revive is not None and not created:
                aggregate = self._revived(stream, event.originator_version, position)
            if aggregate is None:
                if not created:
                    return (f"event version {event.originator_version} of stream {stream} "
                            "comes before the stream was created"), None
                return self._create(position, event), self.aggregates.get(stream)
            if created:
                return f"stream {stream} is created a second time (version " \
                       f"{event.originator_version}); the second creation is ignored", aggregate
            expected = aggregate.version + 1
            event.apply(aggregate)
            aggregate.version = event.originator_version
            aggregate.modified_on = event.timestamp
        except (AttributeError, KeyError, TypeError, ValueError) as err:
            return f"event cannot be applied: {type(err).__name__}: {err}", \
                self.aggregates.get(stream)
        after = aggregate if held else self.aggregates.get(stream)
        if event.originator_version != expected:
            return (f"stream {stream} jumps from version {expected - 1} to "
                    f"{event.originator_version}"), after
        return None, after

    def settle(self, stream: UUID, held: Any = _LOOK_UP) -> None:
        """Let go of ``stream`` if it is a command record, a provider name, or a consumer
        that holds nothing and is no migration in flight (only when streams can be
        revived). ``held``: the stream as held now, when the caller has it at hand (as
        :meth:`apply_to` returns it)."""
        if self.revive is None:
            return
        aggregate: Any = self.aggregates.get(stream) if held is _LOOK_UP else held
        kind = kind_of(aggregate)
        if kind is Consumer or kind is Migration:
            if aggregate.allocations or aggregate.devices or (
                    kind is Migration and aggregate.in_flight):
                return
            self.consumers.pop(aggregate.uuid, None)
        elif kind is not Command and kind is not ProviderName:
            return
        del self.aggregates[stream]
        self.created_at.pop(stream, None)

    def _revived(self, stream: UUID, version: int, position: int) -> Aggregate | None:
        """A stream let go, read back from its events before ``version`` (``None`` unless
        the store holds its creation before ``position``)."""
        assert self.revive is not None
        aggregate = self.revive(stream, version, position)
        if isinstance(aggregate, Consumer | Command | ProviderName):
            self.aggregates[stream] = aggregate
        if isinstance(aggregate, Consumer):
            self.consumers[aggregate.uuid] = aggregate
        return aggregate

    def _create(self, position: int, event: Any) -> str | None:
        aggregate = event.mutate(None)
        stream: UUID = event.originator_id
        self.aggregates[stream] = aggregate
        self.created_at[stream] = position
        kind = kind_of(aggregate)
        if kind is Provider:
            self.providers[aggregate.uuid] = aggregate
            named = PROVIDER_NAMESPACE, aggregate.uuid  # provider_stream_id
        elif kind is Consumer or kind is Migration:
            self.consumers[aggregate.uuid] = aggregate
            named = CONSUMER_NAMESPACE, aggregate.uuid  # consumer_stream_id
        elif kind is Command:
            self.commands += 1
            named = COMMAND_NAMESPACE, aggregate.command_id  # command_stream_id
        elif kind is ProviderName:
            named = PROVIDER_NAME_NAMESPACE, aggregate.name  # provider_name_stream_id
        elif kind is ResourceClass:
            named = RESOURCE_CLASS_NAMESPACE, aggregate.name  # resource_class_stream_id
        elif kind is Trait:
            named = TRAIT_NAMESPACE, aggregate.name  # trait_stream_id
        else:
            return f"stream {stream} holds an unknown aggregate {type(aggregate).__name__}"
        if event.originator_version != 1:
            return f"stream {stream} starts at version {event.originator_version}, not 1"
        if not isinstance(stream, UUID) or stream.int != uuid5_number(*named):
            return f"stream {stream} should be {uuid5(*named)} for {_natural_id(aggregate)}"
        return None

    def migrations(self) -> list[Migration]:
        """Every migration consumer."""
        return [c for c in self.consumers.values() if isinstance(c, Migration)]

    def in_flight_migration(self, consumer: Consumer) -> Migration | None:
        """The move ``consumer`` is in the middle of, if any."""
        if consumer.migration_uuid is None:
            return None
        found = self.consumers.get(consumer.migration_uuid)
        return found if isinstance(found, Migration) and found.in_flight else None


#: The ledger's aggregate classes, a subclass before its base (see :func:`kind_of`).
KINDS: tuple[type[Aggregate], ...] = (Provider, Migration, Consumer, Command, ProviderName,
                                      ResourceClass, Trait)
_KIND_OF: dict[type, type[Aggregate] | None] = {}


def kind_of(aggregate: Any) -> type[Aggregate] | None:
    """The first of :data:`KINDS` that ``aggregate`` is an instance of (``None``: none, or
    no aggregate), found once per type: the aggregates' metaclass is an ``ABCMeta``, whose
    ``isinstance`` of another class is a Python call, and a replay asks for every event."""
    cls = type(aggregate)
    try:
        return _KIND_OF[cls]
    except KeyError:
        found = _KIND_OF[cls] = next((k for k in KINDS if issubclass(cls, k)), None)
        return found


_CREATES: dict[type, bool] = {}


def creates(event: Any) -> bool:
    """``isinstance(event, Aggregate.Created)``, found once per event class (the events'
    metaclass is an ``ABCMeta`` too: see :func:`kind_of`)."""
    cls = type(event)
    try:
        return _CREATES[cls]
    except KeyError:
        found = _CREATES[cls] = issubclass(cls, Aggregate.Created)
        return found


def _natural_id(aggregate: Any) -> str:
    if isinstance(aggregate, Command):
        return str(aggregate.command_id)
    if isinstance(aggregate, Trait):
        return f"trait {aggregate.name}"
    if isinstance(aggregate, ProviderName | ResourceClass):
        return str(aggregate.name)
    return str(aggregate.uuid)


def fingerprint(aggregate: Aggregate) -> dict[str, Any]:
    """What §5.5 says a replay must reproduce, as plain data to compare."""
    if isinstance(aggregate, Provider):
        return {"version": aggregate.version, "inventories": aggregate.inventories,
                "usages": {rc: n for rc, n in aggregate.usages.items() if n},
                "devices": aggregate.devices, "children": sorted(aggregate.children),
                "traits": aggregate.traits, "aggregates": aggregate.aggregates,
                "deleted": aggregate.deleted}
    if isinstance(aggregate, Trait):
        return {"version": aggregate.version, "deleted": aggregate.deleted}
    if isinstance(aggregate, Consumer):
        found: dict[str, Any] = {
            "version": aggregate.version, "allocations": aggregate.allocations,
            "devices": aggregate.devices, "migration_uuid": aggregate.migration_uuid,
        }
        if isinstance(aggregate, Migration):
            found.update(status=aggregate.status, destination_root=aggregate.destination_root,
                         new_allocations=aggregate.new_allocations,
                         old_allocations=aggregate.old_allocations)
        return found
    return {"version": aggregate.version}
