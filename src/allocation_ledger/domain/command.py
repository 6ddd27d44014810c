"""The command record: one stream per command id, holding one event.

Every command the service applies appends, in the same atomic append as its own events, a
:class:`Command.Recorded` event at version 1 of the stream ``command_stream_id(command_id)``.
The store's unique (stream, version) key then makes a command id unique: a second append
with the same id (a client's retry, or the database driver's own resend after a lost reply)
is refused by the store, and the record says what the first one did. The record carries the
command's name, a fingerprint of its arguments (so a reused id is told from a retry), and
the version each stream was left at (so the outcome can be read back as of that command).
"""

from __future__ import annotations

from dataclasses import dataclass

from eventsourcing.domain import Aggregate

from allocation_ledger.domain.ids import command_stream_id
from allocation_ledger.domain.values import PlainState, RequestMeta


class Command(PlainState, Aggregate):
    """A command the ledger applied, as recorded with its events."""

    class Recorded(Aggregate.Created):
        """Command ``command_id`` (``name``, arguments hashed as ``fingerprint``) was
        applied; it left each stream of ``streams`` (stream id -> version) at that version,
        read ``read`` (stream id -> version) without changing them, and appended ``events``
        events besides this one."""

        command_id: str
        name: str
        fingerprint: str
        streams: dict[str, int]
        read: dict[str, int]
        events: int
        request: RequestMeta

    def __init__(self, command_id: str, name: str, fingerprint: str, streams: dict[str, int],
                 read: dict[str, int], events: int, request: RequestMeta) -> None:
        self.command_id = command_id
        self.name = name
        self.fingerprint = fingerprint
        self.streams = streams
        self.read = read
        self.events = events
        self.request = request

    @classmethod
    def record(cls, command_id: str, name: str, fingerprint: str, streams: dict[str, int],
               read: dict[str, int], events: int, request: RequestMeta) -> Command:
        """The record of a command about to be appended with its events."""
        return cls._create(
            cls.Recorded, id=command_stream_id(command_id), command_id=command_id, name=name,
            fingerprint=fingerprint, streams=streams, read=read, events=events,
            request=request,
        )


@dataclass(frozen=True)
class Intent:
    """One call of a command: its id, name, the fingerprint of its validated arguments
    (``""`` when the ledger made the id up: nothing else can name it) and who asked
    (stored with every event it appends)."""

    command_id: str
    name: str
    fingerprint: str
    meta: RequestMeta
    #: the caller chose the id (it may retry with it), or the ledger made it up
    given: bool

    def record(self, streams: dict[str, int], read: dict[str, int], events: int) -> Command:
        """This command's record, to go first in its append."""
        return Command.record(self.command_id, self.name, self.fingerprint, streams, read,
                              events, self.meta)


class CommandEnds:
    """Where one command's events end and the next command's begin, in a replay of the
    ledger: feed it the events in ledger order. Every event a command appends (its record
    first) carries the command's ``request``, with the command's id in it, and a command's
    events are consecutive (one command, one append, or one block of a group's append), so
    a new command begins exactly where the id changes. The audit checks the invariants
    there; the projections end their batches there.
    """

    def __init__(self) -> None:
        self._command: object = _NOTHING

    def opens_command(self, event: object) -> bool:
        """True when ``event`` belongs to another command than the event before it."""
        request = getattr(event, "request", None)
        command = request.get("command_id", request) if isinstance(request, dict) else request
        opens = self._command is not _NOTHING and command != self._command
        self._command = command
        return opens


_NOTHING = object()
