"""Applying a command exactly once: the write path every command of
:class:`~.ledger.Ledger` goes through.

A command is parsed (:mod:`.inputs`), given an :class:`Intent` (its id, the caller's or a
fresh one, and for an id the caller chose the fingerprint of its arguments), and handed to
:func:`handle`: one loop that runs the command's handler over a
:class:`~.unit_of_work.UnitOfWork` and commits, counting the tries that lost the connection
and the attempts that clashed, until it has an outcome or a refusal. The unit of work
appends the command's record (:class:`~allocation_ledger.domain.command.Command`) in the
same atomic append as its events, so the store's unique (stream, version) key admits one
command per id. Then:

- a clash on the record (the client retried, or the driver resent an append whose reply was
  lost) means the command is already applied: the outcome is read back as of that command
  and returned with ``replayed`` set, and nothing is appended;
- the same id with another command is :class:`CommandIdReused`;
- a refusal (a conflict, say) of a command whose id the caller chose, or whose append may
  have been sent before it failed, is checked against the record first, so the caller's
  own earlier success is never reported as a conflict;
- a lost connection is retried (safe: the record makes the retry idempotent); if the store
  stays out of reach the caller gets :class:`StoreLost` (not applied) or
  :class:`OutcomeUnknown` (an append was under way), both telling it to retry with the same
  id;
- a clash on provider streams alone is run again, reading fresh, after the policy's pause
  (:mod:`.policy`); what the first attempt took unread is checked before a refusal or a
  commit rests on it. A consumer generation conflict is never retried.

With group commit on (:mod:`.grouping`) a command whose caller gave no id is first offered
to the group: decided with the commands of other threads and appended, its record with its
events, in the group's one append. A command the group could not take is decided here
alone; a group append the store refused (a driver's resend after a lost reply, say) is
answered from each command's record, like any other refusal of an append that carried it.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import fields, is_dataclass, replace
from typing import Any, Protocol, TypeVar
from uuid import UUID, uuid4

import orjson
import psycopg
from eventsourcing.persistence import IntegrityError, InterfaceError, OperationalError
from pydantic import BaseModel

from allocation_ledger.adapters.encoding import is_plain
from allocation_ledger.adapters.eventstore import EventStore, project
from allocation_ledger.application.inputs import RequestIn, request_meta
from allocation_ledger.application.policy import WritePolicy
from allocation_ledger.application.unit_of_work import Clash, Handler, UnitOfWork
from allocation_ledger.domain.command import Command, Intent
from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.errors import (
    CommandIdReused,
    ConcurrentUpdate,
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

__all__ = ["Handler", "Intent"]

C = TypeVar("C")
T = TypeVar("T")


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


class Commits(Protocol):
    """A group commit (:class:`~.grouping.GroupCommit`): decides and appends a command with
    those of other threads; ``None`` when it is to be decided alone."""

    def run(self, handler: Handler[C], command: C, intent: Intent,
            new_consumers: Iterable[str] = ()) -> UnitOfWork | None:
        """The unit of work that applied the command in a group, or ``None``."""
        ...


def intent(name: str, command_id: CommandId | None,
           request: Mapping[str, str] | RequestIn | None,
           *inputs: BaseModel | Mapping[str, Any] | str | int | None) -> Intent:
    """The intent of a call of command ``name`` with these validated ``inputs``. The
    fingerprint tells a retry from another command under a reused id; a command whose
    caller gave no id has a fresh one that nothing else can name, so it has none (``""``)."""
    if command_id is None:
        chosen = uuid4().hex
        return Intent(chosen, name, "", request_meta(request, chosen), False)
    chosen = command_id_of(command_id)
    return Intent(chosen, name, fingerprint(name, inputs), request_meta(request, chosen), True)


def fingerprint(name: str, inputs: Inputs) -> str:
    """The SHA-256 of the canonical JSON of ``[name, inputs]`` (inputs as their JSON dumps).

    A model's JSON dump needs no :func:`_keyed` pass: pydantic's JSON mode gives every
    mapping string keys already, so the pass would return it unchanged (the fingerprint is
    the same byte for byte; ``tests/unit/test_fingerprints.py`` holds stored values)."""
    args = [i.model_dump(mode="json") if isinstance(i, BaseModel) else _keyed(i)
            for i in inputs]
    value = [_keyed(name), args]
    if is_plain(value):  # orjson writes plain JSON as the standard library does, but for
        encoded = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)  # the characters that
        if encoded.isascii() and b"\x7f" not in encoded:  # ensure_ascii escapes
            return hashlib.sha256(encoded).hexdigest()
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
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

    def get(self, stream: UUID) -> Any:
        """The aggregate of any stream as of this point (``None``: none yet)."""
        version = self._versions.get(str(stream))
        if version is None:
            return self._store.get(stream)
        if version == 0:  # the command created the stream: before it, there was none
            return None
        return self._store.repository.get(stream, version=version, projector_func=project)

    def pinned(self, stream: UUID) -> bool:
        """True when ``stream`` is read at a version of its own (the command wrote or read
        it), not as it is now."""
        return str(stream) in self._versions

    def provider(self, provider_uuid: str) -> Provider:
        """The provider as the command left it."""
        found = self.get(provider_stream_id(provider_uuid))
        if not isinstance(found, Provider):
            raise ProviderNotFound(provider_uuid)
        return found

    def consumer(self, consumer_uuid: str) -> Consumer | None:
        """The consumer as the command left it."""
        found = self.get(consumer_stream_id(consumer_uuid))
        return found if isinstance(found, Consumer) else None

    def migration(self, migration_uuid: str) -> Migration:
        """The migration as the command left it."""
        found = self.consumer(migration_uuid)
        if not isinstance(found, Migration):
            raise MigrationNotFound(migration_uuid)
        return found


#: What a command's outcome is read from: the unit of work that applied it, or the ledger
#: as its record says it left it.
Reader = UnitOfWork | AsOf


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


def handle(store: EventStore, policy: WritePolicy, handler: Handler[C], command: C,
           it: Intent, outcome: Callable[[Reader], T], new_consumers: Iterable[str] = (),
           commits: Commits | None = None) -> T:
    """Apply ``command`` with ``handler`` under ``it``, exactly once; ``outcome`` read from
    the unit of work that applied it, or, when it was applied already, from the ledger as
    it left it (flagged ``replayed``). ``new_consumers``: the consumers the command expects
    to create; ``commits``: the group commit to offer it to first (``None``: off)."""
    run = _Run(store, policy, it, tuple(new_consumers))
    group = commits if not it.given else None  # a caller's id is checked alone
    while True:
        try:
            try:
                if group is not None:
                    offer, group, run.sent = group, None, True
                    began = time.perf_counter()
                    grouped = offer.run(handler, command, it, run.new_consumers)
                    run.sent = grouped is not None  # None: the group sent nothing of it
                    if grouped is None:
                        continue
                    if run.metrics is not None:
                        run.metrics.appended(time.perf_counter() - began)
                    return outcome(grouped)
                uow = run.attempt(handler, command)
                if uow is not None:
                    return outcome(uow)
            except Clash as clash:
                if run.sent and (record := recorded(store, it.command_id)) is not None:
                    return replay(store, it, record, outcome)  # a resend of an applied append
                run.clashed(clash)
            except LedgerError as err:
                if (it.given or run.sent) and (record := recorded(store, it.command_id)):
                    return replay(store, it, record, outcome)  # applied by an earlier try
                run.refusal(err)
                raise
            finally:
                run.end_turns()
        except CONNECTION_ERRORS as err:
            run.lost_connection(err)


class _Run:
    """One call of :func:`handle`: its attempt's unit of work and its two counters, the
    tries that lost the connection and the attempts that clashed."""

    def __init__(self, store: EventStore, policy: WritePolicy, it: Intent,
                 new_consumers: tuple[str, ...]) -> None:
        self.store, self.policy, self.it = store, policy, it
        self.metrics = store.metrics  # None unless instrumented (allocation_ledger.metrics)
        self.new_consumers = new_consumers
        self.lost = self.clashes = 0
        #: an append carrying the record went out: it may have been applied
        self.sent = False
        #: the store refused a consumer taken as new unread
        self.refused: IntegrityError | None = None
        self.uow: UnitOfWork | None = None

    def attempt(self, handler: Handler[C], command: C) -> UnitOfWork | None:
        """One attempt: the unit of work that committed the command, or ``None`` when what
        it took unread may have misled it (the next attempt reads fresh)."""
        attempt, policy, metrics = self.clashes + 1, self.policy, self.metrics
        if attempt > policy.max_attempts:
            if metrics is not None:
                metrics.refused(ConcurrentUpdate.__name__)
            raise ConcurrentUpdate(self.uow.provider_uuids if self.uow is not None else [],
                                   policy.max_attempts)
        if attempt > 1 and metrics is not None:
            metrics.retried()
        trusting = policy.trusts_cache(attempt)
        self.uow = uow = UnitOfWork(self.store, self.it, policy=policy, attempt=attempt,
                                    new_consumers=self.new_consumers if trusting else (),
                                    turns=True)
        try:
            handler(uow, command)
        except LedgerError:
            if not (trusting and uow.doubtful(unwritten_only=False)):
                raise
            self.clashes += 1
            return None
        if (trusting and uow.doubtful(unwritten_only=True)) or uow.yields_turn():
            self.clashes += 1
            return None
        began = time.perf_counter()
        self.sent = True
        uow.commit()
        if metrics is not None:
            metrics.appended(time.perf_counter() - began)
        return uow

    def clashed(self, clash: Clash) -> None:
        """Note the providers clashed on, let go of them, and pause as the policy says."""
        uow, policy, attempt = self.uow, self.policy, self.clashes + 1
        if uow is not None:
            if (policy.trusts_cache(attempt) and uow.assumed_absent
                    and isinstance(clash.__cause__, IntegrityError)):
                self.refused = clash.__cause__
            policy.clashed(uow.written)
            uow.end_turns()
        self.clashes += 1
        pause = policy.pause(attempt)
        if pause:
            time.sleep(pause)

    def refusal(self, err: LedgerError) -> None:
        """Count ``err``; give it as its cause the store's refusal of a consumer an earlier
        attempt took as new unread, when it has none of its own."""
        if self.metrics is not None:
            self.metrics.refused(type(err).__name__)
        if self.refused is not None and err.__cause__ is None:
            err.__cause__ = self.refused

    def end_turns(self) -> None:
        if self.uow is not None:
            self.uow.end_turns()

    def lost_connection(self, err: BaseException) -> None:
        """Count a lost connection; :class:`OutcomeUnknown` or :class:`StoreLost` when it
        was the last try."""
        self.lost += 1
        if self.lost >= RECOVERY_ATTEMPTS:
            reason = f"{type(err).__name__}: {err}".strip()
            if self.sent:
                raise OutcomeUnknown(self.it.command_id, reason) from err
            raise StoreLost(self.it.command_id, reason) from err
        time.sleep(RECOVERY_PAUSE * self.lost)


def guarded_read(read: Callable[[], T]) -> T:
    """A read of the ledger, a lost connection turned into :class:`StoreLost`."""
    try:
        return read()
    except CONNECTION_ERRORS as err:
        raise StoreLost(None, f"{type(err).__name__}: {err}") from err
