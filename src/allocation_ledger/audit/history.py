"""History: every event of a consumer, a provider or a migration, in order, with when, who,
why and what changed; and the ledger itself as a stream of plain records (JSON lines).

A migration's history is its own stream plus the events of its instance from the moment
the move started to the moment it resolved (the destination claim, the hand-back), so one
listing tells the whole move.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from allocation_ledger.adapters.decoding import Decoder
from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.application.inputs import canonical_uuid
from allocation_ledger.audit.changes import changes, summary
from allocation_ledger.audit.ledger_events import as_uuid, decode, entries, notifications
from allocation_ledger.audit.state import LedgerState
from allocation_ledger.domain.command import Command
from allocation_ledger.domain.errors import MigrationNotFound, NotFound
from allocation_ledger.domain.ids import consumer_stream_id, provider_stream_id, trait_stream_id
from allocation_ledger.domain.migration import Migration
from allocation_ledger.domain.resource_class import ResourceClass
from allocation_ledger.domain.trait import Trait

#: How many streams' names the ledger export keeps (a stream named again after that many
#: others has its first event read again).
MAX_NAMES = 50_000
HIDDEN = frozenset({"originator_id", "originator_version", "timestamp", "originator_topic",
                    "request"})


@dataclass(frozen=True)
class HistoryEntry:
    """One event of a history: where, when, who asked, why, and what it changed."""

    position: int
    stream: str
    version: int
    event: str
    time: datetime
    request: dict[str, str]
    changes: dict[str, Any] = field(default_factory=dict)
    summary: str = ""

    @property
    def actor(self) -> str | None:
        """Who asked for the change."""
        return self.request.get("actor")

    @property
    def request_id(self) -> str | None:
        """The id of the request that made the change."""
        return self.request.get("request_id")

    @property
    def reason(self) -> str | None:
        """Why the change was asked for."""
        return self.request.get("reason")

    def to_dict(self) -> dict[str, Any]:
        """The entry as JSON-ready data (with the actor's ``project`` when it was stored)."""
        project = {"project": self.request["project"]} if "project" in self.request else {}
        return {"position": self.position, "stream": self.stream, "version": self.version,
                "event": self.event, "time": self.time.isoformat(), "actor": self.actor,
                **project, "request_id": self.request_id, "reason": self.reason,
                "changes": self.changes, "summary": self.summary}


def streams_history(store: EventStore, streams: set[UUID]) -> list[HistoryEntry]:
    """Every event of ``streams``, in ledger order, each with what it changed."""
    found: list[HistoryEntry] = []
    state = LedgerState()  # tolerates a broken stream: history must show it, not crash
    decoder = Decoder(store.mapper)
    for notification in notifications(store):
        stream = as_uuid(notification.originator_id)
        if stream not in streams:
            continue
        event = decode(store, notification, decoder).event
        if event is None:
            continue
        what = changes(event, state.aggregates.get(stream))
        found.append(HistoryEntry(notification.id, str(stream), event.originator_version,
                                  type(event).__qualname__, event.timestamp,
                                  dict(event.request), what, summary(event, what)))
        state.apply(notification.id, event)
    return found


def consumer_history(store: EventStore, consumer_uuid: str) -> list[HistoryEntry]:
    """Every event of a consumer (an instance or a migration record); :class:`NotFound` when
    it has none, :class:`InvalidRequest` for a malformed id."""
    consumer_uuid = canonical_uuid(consumer_uuid)
    return _found(streams_history(store, {consumer_stream_id(consumer_uuid)}),
                  "consumer", consumer_uuid)


def provider_history(store: EventStore, provider_uuid: str) -> list[HistoryEntry]:
    """Every event of a provider: inventory, devices, children, allocation writes
    (:class:`NotFound` when it has none, :class:`InvalidRequest` for a malformed id)."""
    provider_uuid = canonical_uuid(provider_uuid)
    return _found(streams_history(store, {provider_stream_id(provider_uuid)}),
                  "provider", provider_uuid)


def _found(history: list[HistoryEntry], what: str, uuid: str) -> list[HistoryEntry]:
    if not history:
        raise NotFound(f"{what} {uuid} has no events in this ledger", **{f"{what}_uuid": uuid})
    return history


def migration_history(store: EventStore, migration_uuid: str) -> list[HistoryEntry]:
    """A move from start to resolution: the migration's events and its instance's."""
    migration_uuid = canonical_uuid(migration_uuid)
    stream = consumer_stream_id(migration_uuid)
    first = next(iter(store.events.get(stream, lte=1)), None)
    if not isinstance(first, Migration.Started):
        raise MigrationNotFound(migration_uuid)
    instance = consumer_stream_id(first.instance_uuid)
    mine = str(stream)
    both = streams_history(store, {stream, instance})
    own = [e for e in both if e.stream == mine]
    end = next((e.position for e in own if "status" in e.changes), None)

    def part_of_move(e: HistoryEntry) -> bool:
        # The hand-back of a revert is appended just after the migration's own event.
        return e.stream == mine or e.changes.get("migration_uuid") == migration_uuid or (
            e.position >= own[0].position and (end is None or e.position <= end))

    return [e for e in both if part_of_move(e)]


def ledger_records(store: EventStore, start: int = 1,
                   stop: int | None = None) -> Iterator[dict[str, Any]]:
    """The ledger from ``start`` to ``stop`` (inclusive) as plain records: position, stream,
    what it is (provider or consumer, and its uuid), event, time, request and payload."""
    names: OrderedDict[UUID, tuple[str, str]] = OrderedDict()  # the streams seen lately
    for entry in entries(store, start, stop):
        record: dict[str, Any] = {"position": entry.position, "stream": str(entry.stream),
                                  "version": entry.version}
        if entry.event is None:
            yield {**record, "topic": entry.topic, "error": entry.error}
            continue
        event = entry.event
        kind, name = _named(names, store, entry.stream, event)
        if kind:
            record[kind] = name
        request = dict(event.request)
        yield {**record, "event": type(event).__qualname__,
               "time": event.timestamp.isoformat(), "actor": request.get("actor"),
               "request_id": request.get("request_id"), "reason": request.get("reason"),
               "data": {k: v for k, v in vars(event).items() if k not in HIDDEN}}


def _named(names: OrderedDict[UUID, tuple[str, str]], store: EventStore, stream: UUID,
           event: Any) -> tuple[str, str]:
    """Whose ``stream`` is, from ``names`` (the streams named most lately, at most
    ``MAX_NAMES``: a ledger's past is mostly streams never named again, so remembering
    every one would make the export's memory grow with the ledger) or else its first
    event."""
    found = names.get(stream)
    if found is not None:
        names.move_to_end(stream)
        return found
    found = names[stream] = _name(store, stream, event)
    if len(names) > MAX_NAMES:
        names.popitem(last=False)
    return found


def _name(store: EventStore, stream: UUID, event: Any) -> tuple[str, str]:
    """What a stream is and its name, from its first event: a provider or a consumer (and
    its uuid), a custom trait or resource class (its name), a command (its id); ``("", "")``
    when its first event names none (the record's ``stream`` is then all there is)."""
    first = event if event.originator_version == 1 else next(
        iter(store.events.get(stream, lte=1)), None)
    if first is not None and hasattr(first, "provider_uuid"):
        return "provider_uuid", str(first.provider_uuid)
    if first is not None and hasattr(first, "consumer_uuid"):
        return "consumer_uuid", str(first.consumer_uuid)
    if isinstance(first, Trait.Created):
        return "trait", first.name
    if isinstance(first, ResourceClass.Created):
        return "resource_class", first.name
    if isinstance(first, Command.Recorded):
        return "command_id", first.command_id
    return "", ""


def trait_history(store: EventStore, name: str) -> list[HistoryEntry]:
    """Every creation and deletion of a custom trait (:class:`NotFound` when it has none).
    Which providers took or lost it is in their own histories (``traits +NAME``)."""
    if not isinstance(name, str) or not name:
        raise NotFound(f"trait {name!r} has no events in this ledger", name=name)
    history = streams_history(store, {trait_stream_id(name)})
    if not history:
        raise NotFound(f"trait {name} has no events in this ledger", name=name)
    return history
