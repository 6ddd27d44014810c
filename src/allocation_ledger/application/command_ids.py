"""Command ids: every command is applied at most once, and its caller learns the truth.

A command runs under an :class:`Intent`: its id (the caller's, else a fresh one), its name
and a fingerprint of its validated arguments. The unit of work appends the command's record
(:class:`~allocation_ledger.domain.command.Command`) in the same atomic append as its
events, so the store's unique (stream, version) key admits one command per id. Then:

- a clash on the record (the client retried, or the driver resent an append whose reply was
  lost) means the command is already applied: the outcome is read back as of that command
  and returned with ``replayed`` set, and nothing is appended;
- the same id with another command is :class:`CommandIdReused`;
- a refusal (a conflict, say) of a command whose id the caller chose, or whose append may
  have been sent before a connection failed, is checked against the record first, so the
  caller's own earlier success is never reported as a conflict;
- a lost connection is retried a few times (safe: the record makes the retry idempotent);
  if the store stays out of reach the caller gets :class:`StoreLost` (not applied) or
  :class:`OutcomeUnknown` (an append was under way), both telling it to retry with the same id.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import Any, Protocol, TypeVar
from uuid import UUID, uuid4

import psycopg
from eventsourcing.persistence import InterfaceError, OperationalError
from pydantic import BaseModel

from allocation_ledger.adapters.eventstore import EventStore, project
from allocation_ledger.application.inputs import RequestIn, request_meta
from allocation_ledger.domain.command import Command
from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.errors import (
    CommandIdReused,
    InvalidRequest,
    LedgerError,
    MigrationNotFound,
    OutcomeUnknown,
    ProviderNotFound,
    StoreLost,
)
from allocation_ledger.domain.ids import command_stream_id, consumer_stream_id, provider_stream_id
from allocation_ledger.domain.migration import Migration
from allocation_ledger.domain.provider import Provider
from allocation_ledger.domain.values import RequestMeta

T = TypeVar("T")


class Reader(Protocol):
    """What a command's outcome is read from: the unit of work that applied it, or
    :class:`AsOf` its record."""

    @property
    def appended(self) -> int:
        """How many events the command appended."""
        ...

    def provider(self, provider_uuid: str) -> Provider:
        """A provider (:class:`ProviderNotFound` if absent or deleted)."""
        ...

    def consumer(self, consumer_uuid: str) -> Consumer | None:
        """A consumer, ``None`` if never written."""
        ...

    def migration(self, migration_uuid: str) -> Migration:
        """A migration (:class:`MigrationNotFound` if there is none)."""
        ...



#: What a lost or refused connection raises (the library's wrappers and psycopg's own).
CONNECTION_ERRORS = (OperationalError, InterfaceError, psycopg.OperationalError,
                     psycopg.InterfaceError)
#: How many times a command that lost its connection is run (the store's own reads and
#: append already retry a lost connection ten times each; this runs the whole command again
#: once more, which the record makes safe).
RECOVERY_ATTEMPTS = 2
RECOVERY_PAUSE = 0.5

CommandId = str | UUID


Inputs = tuple[BaseModel | Mapping[str, Any] | str | int | None, ...]


@dataclass
class Intent:
    """One call of a command: its id, name, validated arguments and request metadata."""

    command_id: str
    name: str
    meta: RequestMeta
    #: the caller chose the id (a retry is possible), or the ledger made it up
    given: bool
    #: the command's validated arguments (frozen models and values the ledger made)
    inputs: Inputs = ()
    #: an append of this command was sent (its outcome is unknown if the connection broke)
    sent: bool = field(default=False)
    _fingerprint: str | None = field(default=None, repr=False)

    @property
    def fingerprint(self) -> str:
        """The arguments' fingerprint (:func:`fingerprint`), taken when first asked for: a
        command appended in a group commit is never recorded, so never needs it."""
        if self._fingerprint is None:
            self._fingerprint = fingerprint(self.name, self.inputs)
        return self._fingerprint

    def settle(self) -> None:
        """Take the fingerprint now, for a command that may be recorded: before its handler
        runs (nothing a handler does can change it) and before its attempt holds a turn."""
        _ = self.fingerprint


def intent(name: str, command_id: CommandId | None,
           request: Mapping[str, str] | RequestIn | None,
           *inputs: BaseModel | Mapping[str, Any] | str | int | None) -> Intent:
    """The intent of a call of command ``name`` with these validated ``inputs``."""
    given = command_id is not None
    chosen = command_id_of(command_id) if command_id is not None else uuid4().hex
    return Intent(chosen, name, request_meta(request, chosen), given, inputs)


def fingerprint(name: str, inputs: Inputs) -> str:
    """The SHA-256 of the canonical JSON of ``[name, inputs]`` (inputs as their JSON dumps).

    A model's JSON dump needs no :func:`_keyed` pass: pydantic's JSON mode gives every
    mapping string keys already, so the pass would return it unchanged (the fingerprint is
    the same byte for byte; ``tests/unit/test_fingerprints.py`` holds stored values)."""
    args = [i.model_dump(mode="json") if isinstance(i, BaseModel) else _keyed(i)
            for i in inputs]
    canonical = json.dumps([_keyed(name), args], sort_keys=True, separators=(",", ":"),
                           default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _keyed(value: Any) -> Any:
    """``value`` with every mapping's keys as strings (``repr`` for any other key), so that
    arguments not yet validated (a mapping keyed by ``None`` and ints) still have one
    canonical JSON form; string keys are left as they are."""
    if isinstance(value, Mapping):
        return {k if isinstance(k, str) else repr(k): _keyed(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_keyed(v) for v in value]
    return value


def command_id_of(value: CommandId) -> str:
    """A command id in its stored form (a UUID as its canonical string)."""
    if isinstance(value, UUID):
        return str(value)
    if not isinstance(value, str) or not 1 <= len(value) <= 255 or not value.isprintable():
        raise InvalidRequest(f"a command id is a UUID or a printable string of 1 to 255 "
                             f"characters, not {value!r}", command_id=repr(value))
    return value


class AlreadyRecorded(Exception):
    """The store refused an append because its command id is recorded: ``record``."""

    def __init__(self, record: Command) -> None:
        super().__init__(record.command_id)
        self.record = record


def recorded(store: EventStore, command_id: str) -> Command | None:
    """The record of command ``command_id``, or ``None`` if no such command was applied."""
    found = store.get(command_stream_id(command_id))
    return found if isinstance(found, Command) else None


class AsOf:
    """The ledger as a recorded command left it: the streams it wrote or read, at the
    versions it left them (a stream it did not touch, as it is now)."""

    def __init__(self, store: EventStore, record: Command,
                 versions: Mapping[str, int] | None = None) -> None:
        self._store = store
        self._versions = dict(versions) if versions is not None else {
            **record.read, **record.streams}
        #: how many events the command appended (besides its record)
        self.appended = record.events

    def _get(self, stream: UUID) -> Any:
        version = self._versions.get(str(stream))
        if version is None:
            return self._store.get(stream)
        if version == 0:  # the command created the stream: before it, there was none
            return None
        return self._store.repository.get(stream, version=version, projector_func=project)

    def get(self, stream: UUID) -> Any:
        """The aggregate of any stream as of this point (``None``: none yet)."""
        return self._get(stream)

    def pinned(self, stream: UUID) -> bool:
        """True when ``stream`` is read at a version of its own (the command wrote or read
        it), not as it is now."""
        return str(stream) in self._versions

    def provider(self, provider_uuid: str) -> Provider:
        """The provider as the command left it."""
        found = self._get(provider_stream_id(provider_uuid))
        if not isinstance(found, Provider):
            raise ProviderNotFound(provider_uuid)
        return found

    def consumer(self, consumer_uuid: str) -> Consumer | None:
        """The consumer as the command left it."""
        found = self._get(consumer_stream_id(consumer_uuid))
        return found if isinstance(found, Consumer) else None

    def migration(self, migration_uuid: str) -> Migration:
        """The migration as the command left it."""
        found = self.consumer(migration_uuid)
        if not isinstance(found, Migration):
            raise MigrationNotFound(migration_uuid)
        return found


def before(store: EventStore, record: Command) -> AsOf:
    """The ledger as it was just before the recorded command: each stream it wrote at the
    version before its first event of that command (found by the command id every event
    carries in its ``request``), each stream it only read at the version it read."""
    versions = dict(record.read)
    for stream, after in record.streams.items():
        version = after
        for stored in store.recorder.select_events(UUID(stream), lte=after, desc=True,
                                                   limit=record.events):
            event: Any = store.mapper.to_domain_event(stored)
            if getattr(event, "request", {}).get("command_id") != record.command_id:
                break
            version = event.originator_version - 1
        versions[stream] = version
    return AsOf(store, record, versions)


def mark_replayed(value: T) -> T:
    """``value`` (a view, a list of views, or a plain value) flagged as a replay."""
    if isinstance(value, list):
        return [mark_replayed(v) for v in value]  # type: ignore[return-value]
    if is_dataclass(value) and not isinstance(value, type) and any(
            f.name == "replayed" for f in fields(value)):
        return replace(value, replayed=True)
    return value


def replay(store: EventStore, it: Intent, record: Command,
           outcome: Callable[[AsOf], T]) -> T:
    """The outcome of an applied command, for a retry of it; :class:`CommandIdReused` if
    the retry is another command."""
    if record.name != it.name or record.fingerprint != it.fingerprint:
        raise CommandIdReused(it.command_id, record.name, record.fingerprint, it.name,
                              it.fingerprint)
    return mark_replayed(outcome(AsOf(store, record)))


def execute(store: EventStore, it: Intent, attempt: Callable[[], T],
            outcome: Callable[[AsOf], T]) -> T:
    """Run ``attempt`` (one run of the command) under intent ``it``: replay a command
    already applied, recover from lost connections, never misreport a commit."""
    it.settle()
    lost: BaseException | None = None
    for tries in range(RECOVERY_ATTEMPTS):
        if tries:
            time.sleep(RECOVERY_PAUSE * tries)
        try:
            try:
                return attempt()
            except AlreadyRecorded as found:
                return replay(store, it, found.record, outcome)
            except CommandIdReused:
                raise
            except LedgerError:
                if not (it.given or it.sent):
                    raise
                record = recorded(store, it.command_id)  # applied by an earlier try?
                if record is None:
                    raise
                return replay(store, it, record, outcome)
        except CONNECTION_ERRORS as err:
            lost = err
    reason = f"{type(lost).__name__}: {lost}".strip()
    if it.sent:
        raise OutcomeUnknown(it.command_id, reason) from lost
    raise StoreLost(it.command_id, reason) from lost


def guarded_read(read: Callable[[], T]) -> T:
    """A read of the ledger, a lost connection turned into :class:`StoreLost`."""
    try:
        return read()
    except CONNECTION_ERRORS as err:
        raise StoreLost(None, f"{type(err).__name__}: {err}") from err
