"""What the ledger holds, by name: every provider, consumer and migration ever written.

Streams are named by uuid5 of their UUIDs, so the store alone cannot list them; the first
event of each stream carries its UUID. These reads scan only the events of a few topics
(registrations, deletions, consumer creations, migration starts and ends) and decode only
the ones whose fields they need, so a listing costs one pass over those rows, not a load of
every aggregate. They answer ``list``, id prefixes and the migrations still in flight.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from eventsourcing.persistence import Notification
from eventsourcing.utils import get_topic

from allocation_ledger.adapters.decoding import Decoder
from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.errors import InvalidRequest, UnknownPrefix
from allocation_ledger.domain.migration import Migration
from allocation_ledger.domain.provider import Provider
from allocation_ledger.domain.resource_class import ResourceClass
from allocation_ledger.domain.trait import Trait

BATCH = 5000
RESOLVED = (Migration.Confirmed, Migration.Reverted, Migration.Completed, Migration.Aborted)


@dataclass(frozen=True)
class ProviderEntry:
    """A provider that exists: its UUID, name and place in its tree."""

    uuid: str
    name: str
    parent_uuid: str | None
    root_uuid: str


@dataclass(frozen=True)
class ConsumerEntry:
    """A consumer (instance or migration) ever written: who it belongs to."""

    uuid: str
    project_id: str
    user_id: str
    consumer_type: str
    migration: bool


def _by_topic(store: EventStore, classes: Iterable[type]) -> Iterator[Notification]:
    topics = [get_topic(cls) for cls in classes]
    start = 1
    while True:
        found = store.recorder.select_notifications(start, BATCH, topics=topics)
        if not found:
            return
        yield from found
        start = found[-1].id + 1


def providers(store: EventStore) -> dict[str, ProviderEntry]:
    """Every provider registered and not deleted, in order of registration."""
    decode = Decoder(store.mapper)
    registered = {get_topic(Provider.Registered), get_topic(Provider.Reregistered)}
    moved = {get_topic(Provider.ParentChanged), get_topic(Provider.RootChanged)}
    found: dict[UUID | str, ProviderEntry] = {}
    for n in _by_topic(store, (Provider.Registered, Provider.Reregistered, Provider.Deleted,
                               Provider.ParentChanged, Provider.RootChanged)):
        stream = n.originator_id  # a UUID from every recorder: no conversion per row
        if n.topic in registered:
            event: Any = decode(n)
            found[stream] = ProviderEntry(event.provider_uuid, event.name, event.parent_uuid,
                                          event.root_uuid)
        elif n.topic in moved:
            if stream in found:
                event = decode(n)
                was = found[stream]
                parent = getattr(event, "parent_uuid", was.parent_uuid)
                found[stream] = ProviderEntry(was.uuid, was.name, parent, event.root_uuid)
        else:
            found.pop(stream, None)
    return {entry.uuid: entry for entry in found.values()}


def consumers(store: EventStore) -> dict[str, ConsumerEntry]:
    """Every consumer ever written (instances and migrations), in order of first write."""
    decode = Decoder(store.mapper)
    started = get_topic(Migration.Started)
    found: dict[str, ConsumerEntry] = {}
    for n in _by_topic(store, (Consumer.Created, Migration.Started)):
        event: Any = decode(n)
        found[event.consumer_uuid] = ConsumerEntry(
            event.consumer_uuid, event.project_id, event.user_id, event.consumer_type,
            n.topic == started)
    return found


def migrations(store: EventStore, *, in_flight_only: bool = False) -> list[str]:
    """The UUIDs of every migration ever started (or of those not yet resolved), oldest
    first. An end is known by its stream id alone, and only the starts of the migrations
    asked for are decoded."""
    decode = Decoder(store.mapper)
    started = get_topic(Migration.Started)
    starts: dict[UUID | str, Notification] = {}
    ended: set[UUID | str] = set()
    classes = (Migration.Started, *RESOLVED) if in_flight_only else (Migration.Started,)
    for n in _by_topic(store, classes):
        stream = n.originator_id  # a UUID from every recorder: no conversion per row
        if n.topic == started:
            starts[stream] = n
        else:
            ended.add(stream)
    return [decode(n).consumer_uuid for stream, n in starts.items() if stream not in ended]


def custom_traits(store: EventStore) -> list[str]:
    """Every custom trait that exists (created, and not deleted since), by name."""
    return _live_names(store, Trait.Created, Trait.Recreated, Trait.Deleted)


def resource_classes(store: EventStore) -> list[str]:
    """The custom resource classes created and not deleted, by name."""
    return _live_names(store, ResourceClass.Created, ResourceClass.Recreated,
                       ResourceClass.Deleted)


def _live_names(store: EventStore, created: type, recreated: type, deleted: type) -> list[str]:
    """The names (carried by ``created``) of the streams whose last event of these three is
    not ``deleted``, sorted."""
    decode = Decoder(store.mapper)
    first, gone = get_topic(created), get_topic(deleted)
    names: dict[UUID | str, str] = {}
    live: dict[UUID | str, bool] = {}
    for n in _by_topic(store, (created, recreated, deleted)):
        stream = n.originator_id
        if n.topic == first:
            names[stream] = decode(n).name
        live[stream] = n.topic != gone
    return sorted(names[s] for s, alive in live.items() if alive and s in names)


def provider_traits(store: EventStore) -> dict[str, list[str]]:
    """The traits of every live provider that has some, by provider UUID: its last
    ``TraitsSet`` since it was (last) registered."""
    decode = Decoder(store.mapper)
    registered, traits_set = get_topic(Provider.Registered), get_topic(Provider.TraitsSet)
    uuids: dict[UUID | str, str] = {}
    held: dict[UUID | str, list[str]] = {}
    for n in _by_topic(store, (Provider.Registered, Provider.TraitsSet, Provider.Deleted)):
        stream = n.originator_id
        if n.topic == registered:
            uuids[stream] = decode(n).provider_uuid
        elif n.topic == traits_set:
            held[stream] = decode(n).traits
        else:
            held.pop(stream, None)
    return {uuids[s]: traits for s, traits in held.items() if traits and s in uuids}


def resolve(kind: str, text: str, known: Iterable[str]) -> str:
    """The one UUID among ``known`` that starts with ``text`` (a full UUID is taken as it
    is); :class:`NotFound` when none does, :class:`InvalidRequest` when several do."""
    wanted = text.strip().lower()
    if len(wanted) == 36:
        return wanted
    if not wanted or len(wanted) > 36 or any(c not in "0123456789abcdef-" for c in wanted):
        raise InvalidRequest(f"{text!r} is neither a UUID nor a UUID prefix", value=text)
    matches = sorted(uuid for uuid in known if uuid.startswith(wanted))
    if not matches:
        raise UnknownPrefix(kind, text)
    if len(matches) > 1:
        shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
        raise InvalidRequest(
            f"{kind} prefix {text!r} is ambiguous: {len(matches)} match ({shown}); "
            "give more characters", prefix=text, matches=matches)
    return matches[0]
