"""Looking a command up by its id: applied or not, where, when, by whom, which streams."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.adapters.positions import position_of
from allocation_ledger.domain.command import Command
from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.ids import command_stream_id
from allocation_ledger.domain.migration import Migration
from allocation_ledger.domain.provider import Provider


@dataclass(frozen=True)
class StreamWritten:
    """A stream a command appended to, and the version (generation) it left it at."""

    stream_id: str
    kind: str  # "provider", "consumer" or "migration"
    uuid: str
    version: int


@dataclass(frozen=True)
class CommandView:
    """What became of one command id. ``applied`` is False when the ledger holds no command
    of that id (never received, refused, or lost before its append committed): then it is
    safe to send it again with the same id."""

    command_id: str
    applied: bool
    name: str | None = None
    position: int | None = None
    time: datetime | None = None
    request: dict[str, str] = field(default_factory=dict)
    fingerprint: str | None = None
    events: int = 0
    streams: tuple[StreamWritten, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Plain data (for ``--json``)."""
        return {**asdict(self), "time": self.time.isoformat() if self.time is not None else None,
                "streams": [vars(s) for s in self.streams]}


def lookup(store: EventStore, chosen: str) -> CommandView:
    """The command ``chosen`` (a command id in its stored form) as the ledger recorded it
    (see :class:`CommandView`)."""
    record = store.get(command_stream_id(chosen))
    if not isinstance(record, Command):
        return CommandView(chosen, applied=False)
    return CommandView(
        command_id=chosen, applied=True, name=record.name,
        position=position_of(store.recorder, command_stream_id(chosen), 1),
        time=record.created_on, request=dict(record.request),
        fingerprint=record.fingerprint, events=record.events,
        streams=tuple(_written(store, stream, version)
                      for stream, version in sorted(record.streams.items())),
    )


def _written(store: EventStore, stream: str, version: int) -> StreamWritten:
    found: Any = store.repository.get(UUID(stream), version=version)
    kind = ("migration" if isinstance(found, Migration) else
            "consumer" if isinstance(found, Consumer) else
            "provider" if isinstance(found, Provider) else type(found).__name__.lower())
    return StreamWritten(stream, kind, str(getattr(found, "uuid", "")), version)
