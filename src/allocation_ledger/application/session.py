"""One attempt at one command: load, let the domain decide, save everything at once.

The session remembers the version of every stream it read. When the store refuses the
append (another writer took a (stream, version) first) it tells the two cases apart, as
docs/guarantees.md §3 asks: a consumer written meanwhile is a :class:`ConsumerGenerationConflict`
(never retried: the caller re-reads and re-decides); a migration stream that moved only by
context events (its instance claimed or gave up a destination) changed no generation, and
is treated like a provider clash; a provider that the caller pinned with
an expected generation is a :class:`ProviderGenerationConflict`; anything else was a clash
on provider streams alone, and the command is run again from the start, capacity checks and
all, a bounded number of times.
"""

from __future__ import annotations

import copy
import random
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar
from uuid import UUID

from eventsourcing.domain import Aggregate
from eventsourcing.persistence import IntegrityError, ProgrammingError

from allocation_ledger.adapters.contention import Contention
from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.application.commands import (
    AlreadyRecorded,
    Intent,
    recorded,
    streams_of,
)
from allocation_ledger.domain.command import Command
from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.errors import (
    ConcurrentUpdate,
    ConsumerGenerationConflict,
    LedgerError,
    MigrationNotFound,
    ProviderGenerationConflict,
    ProviderNotFound,
    StoreUnusable,
)
from allocation_ledger.domain.ids import consumer_stream_id, provider_stream_id
from allocation_ledger.domain.migration import Migration
from allocation_ledger.domain.provider import Provider

T = TypeVar("T")

#: How many times a write that clashed only on provider streams is run again.
MAX_ATTEMPTS = 10


class Retry(Exception):
    """The append clashed on provider streams only: run the command again."""


class Session:
    """A :class:`~allocation_ledger.domain.workspace.Workspace` over the event store."""

    def __init__(self, store: EventStore, *, optimistic: bool = False,
                 new_consumers: Iterable[str] = (), group: Group | None = None,
                 intent: Intent | None = None) -> None:
        self._store = store
        #: the group commit this command is decided in, if any (see ``grouping``)
        self._group = group
        self._contention: Contention = store.contention
        #: the providers the last ``save`` wrote to (whether or not the store took it)
        self.written: list[str] = []
        #: the command this session runs: its record is appended with its events
        self._intent = intent
        #: how many events the command appended (besides its record)
        self.appended = 0
        #: read providers from this process's cache without asking the store (see ``run``)
        self._optimistic = optimistic
        self._cached_reads: set[str] = set()
        #: consumers the caller expects to be new, taken as absent without a read when
        #: this process has not seen them (optimistic sessions only)
        self._new_consumers = frozenset(new_consumers) if optimistic else frozenset()
        self._assumed_absent: set[str] = set()
        self._providers: dict[str, Provider | None] = {}
        self._consumers: dict[str, Consumer | None] = {}
        self._new: list[Aggregate] = []
        self._expected_providers: dict[str, int] = {}
        #: consumer -> (stream version, writes that named it, generation) as first read;
        #: all None if absent
        self._loaded: dict[str, tuple[int | None, int | None, int | None]] = {}

    # -- the Workspace protocol -----------------------------------------------------------

    def provider(self, provider_uuid: str) -> Provider:
        """The live provider; :class:`ProviderNotFound` if absent or deleted."""
        provider = self.any_provider(provider_uuid)
        if provider is None or provider.deleted:
            raise ProviderNotFound(provider_uuid)
        return provider

    def consumer(self, consumer_uuid: str) -> Consumer | None:
        """The consumer, or ``None`` if its stream does not exist."""
        if consumer_uuid not in self._consumers:
            if self._assumes_absent(consumer_uuid):
                self._read(consumer_uuid, None)
            else:
                self._read(consumer_uuid,
                           self._store.get(consumer_stream_id(consumer_uuid), short=True))
        return self._consumers[consumer_uuid]

    def prefetch_consumers(self, consumer_uuids: list[str]) -> None:
        """Load many consumers at once (one query for those not cached)."""
        wanted: dict[UUID, str] = {}
        for uuid in consumer_uuids:
            if uuid in self._consumers:
                continue
            if self._assumes_absent(uuid):
                self._read(uuid, None)
            else:
                wanted[consumer_stream_id(uuid)] = uuid
        for stream, found in self._store.get_short_many(wanted).items():
            self._read(wanted[stream], found)

    def _read(self, consumer_uuid: str, found: object) -> None:
        """Remember a consumer as read (``found``: its aggregate, or anything else when its
        stream does not exist) and its version and generation at the time."""
        consumer = found if isinstance(found, Consumer) else None
        self._consumers[consumer_uuid] = consumer
        self._loaded[consumer_uuid] = (
            (consumer.version, consumer.named_writes, consumer.generation)
            if consumer is not None else (None, None, None)
        )

    def migration(self, migration_uuid: str) -> Migration:
        """The migration; :class:`MigrationNotFound` if the consumer is not one."""
        found = self.consumer(migration_uuid)
        if not isinstance(found, Migration):
            raise MigrationNotFound(migration_uuid)
        return found

    def add(self, aggregate: Consumer | Provider) -> None:
        """A new aggregate to save with the rest."""
        self._new.append(aggregate)
        if isinstance(aggregate, Provider):
            self._providers[aggregate.uuid] = aggregate
        else:
            self.consumer(aggregate.uuid)  # remember it was absent
            self._consumers[aggregate.uuid] = aggregate

    # -- extras for provider commands -----------------------------------------------------

    def any_provider(self, provider_uuid: str) -> Provider | None:
        """The provider even if deleted, or ``None`` if it was never registered."""
        if provider_uuid not in self._providers and self._group is not None and (
                provider_uuid in self._group.providers):
            # changed by an earlier command of the group: decide on the group's state
            self._providers[provider_uuid] = copy.deepcopy(self._group.providers[provider_uuid])
        if provider_uuid not in self._providers:
            cached = self._optimistic and not self._contention.contended(provider_uuid)
            found = self._store.get(provider_stream_id(provider_uuid), cached=cached)
            self._providers[provider_uuid] = found if isinstance(found, Provider) else None
            if cached:
                self._cached_reads.add(provider_uuid)
        return self._providers[provider_uuid]

    def pinned_provider(self, provider_uuid: str, expected_generation: int) -> Provider:
        """The provider (read fresh), checked against the generation the caller expects."""
        if provider_uuid in self._cached_reads:
            del self._providers[provider_uuid]
            self._cached_reads.discard(provider_uuid)
        optimistic, self._optimistic = self._optimistic, False
        try:
            provider = self.provider(provider_uuid)
        finally:
            self._optimistic = optimistic
        if provider.version != expected_generation:
            raise ProviderGenerationConflict(provider_uuid, expected_generation,
                                             provider.version)
        self._expected_providers[provider_uuid] = expected_generation
        return provider

    # -- optimistic reads -----------------------------------------------------------------

    def _assumes_absent(self, consumer_uuid: str) -> bool:
        """Take a consumer the caller expects to be new as absent, unread (see ``run``)."""
        if consumer_uuid not in self._new_consumers or self._store.is_cached(
                consumer_stream_id(consumer_uuid)):
            return False
        self._assumed_absent.add(consumer_uuid)
        return True

    @property
    def assumed_absent(self) -> bool:
        """True when a consumer was taken as absent without a read."""
        return bool(self._assumed_absent)

    def stale_reads(self, *, unwritten_only: bool) -> bool:
        """True when a provider taken from the cache was older than the store's, or a
        consumer taken as new exists.

        One the command appends to needs no check (``unwritten_only``): the store refuses
        that append if the copy was stale or the stream exists. One it only read must be
        checked.
        """
        for uuid in self._cached_reads:
            provider = self._providers.get(uuid)
            if provider is None or (unwritten_only and provider.pending_events):
                continue
            if self._store.stream_version(provider.id) != provider.version:
                return True
        for uuid in self._assumed_absent:
            consumer = self._consumers.get(uuid)
            if consumer is not None and consumer.pending_events:
                continue  # its first event: the store refuses it if the stream exists
            if self._store.stream_version(consumer_stream_id(uuid)) is not None:
                return True
        return False

    # -- saving ---------------------------------------------------------------------------

    def changed(self) -> list[Aggregate]:
        """Every aggregate with events to append, in the order the service appends them:
        new streams, then providers, then consumers."""
        changed: list[Aggregate] = list(self._new)
        changed += [p for p in self._providers.values() if p is not None and p.pending_events]
        changed += [c for c in self._consumers.values() if c is not None and c.pending_events]
        return list({id(a): a for a in changed}.values())

    @property
    def consumer_uuids(self) -> set[str]:
        """Every consumer this attempt read or created."""
        return set(self._consumers)

    def save(self) -> int:
        """Append every pending event, and the command's record, in one transaction; the
        number of events appended (besides the record)."""
        changed = self.changed()
        if not changed and (self._intent is None or not self._intent.given):
            return 0  # a no-op; recorded only when the caller chose the id (it may retry)
        count = sum(len(a.pending_events) for a in changed)
        self.written = [a.uuid for a in changed if isinstance(a, Provider)]
        record = self._record(changed, count)
        try:
            self._store.save(*record, *changed)
        except IntegrityError as err:
            self._explain_clash(err)
        except ProgrammingError as err:  # e.g. a read-only role: "permission denied ..."
            raise StoreUnusable(f"the store refused the append: {err}") from err
        self.appended = count
        self._store.remember(p for p in changed if isinstance(p, Provider))
        return count

    def _record(self, changed: list[Aggregate], count: int) -> list[Command]:
        """The command's record, first in its append (see :mod:`.commands`)."""
        it = self._intent
        if it is None:
            return []
        written = streams_of(changed)
        read = {str(a.id): a.version for a in (*self._providers.values(),
                                                  *self._consumers.values())
                if a is not None and str(a.id) not in written}
        it.sent = True
        return [Command.record(it.command_id, it.name, it.fingerprint, written, read, count,
                               it.meta)]

    def _explain_clash(self, err: IntegrityError) -> None:
        if self._intent is not None:  # already applied (a retry, or the driver's resend)?
            found = recorded(self._store, self._intent.command_id)
            if found is not None:
                raise AlreadyRecorded(found) from err
        for uuid, (version, named, generation) in self._loaded.items():
            if uuid in self._assumed_absent:
                continue
            if self._store.stream_version(consumer_stream_id(uuid)) != version:
                current = Session(self._store).consumer(uuid)
                if current is not None and current.named_writes == named:
                    continue  # only context events: no write named it
                raise ConsumerGenerationConflict(
                    uuid, generation, current.generation if current is not None else None
                ) from err
        if self._assumed_absent:  # perhaps a consumer taken as new exists: read it, decide again
            raise Retry from err
        for uuid, expected in self._expected_providers.items():
            actual = self._store.stream_version(provider_stream_id(uuid)) or 0
            if actual != expected:
                raise ProviderGenerationConflict(uuid, expected, actual) from err
        raise Retry from err

    @property
    def provider_uuids(self) -> list[str]:
        """Every provider this attempt read."""
        return sorted(self._providers)


class Group:
    """What the commands already decided in one group commit changed: their providers (the
    next command decides on copies of these), the consumers they touched, and every
    aggregate to append."""

    def __init__(self) -> None:
        self.providers: dict[str, Provider] = {}
        self._consumers: set[str] = set()
        self._changed: dict[UUID, Aggregate] = {}

    def admits(self, session: Session) -> bool:
        """True when a command decided in ``session`` can join: it touched no consumer an
        earlier command touched, and no provider it read from the cache was stale."""
        return not (session.consumer_uuids & self._consumers) and not session.stale_reads(
            unwritten_only=True)

    def take(self, session: Session) -> list[Any]:
        """Add an admitted command; its events, in the order the service appends them."""
        events: list[Any] = []
        changed = session.changed()
        session.appended = sum(len(a.pending_events) for a in changed)
        for aggregate in changed:
            events += aggregate.collect_events()
            self._changed[aggregate.id] = aggregate
            if isinstance(aggregate, Provider):
                self.providers[aggregate.uuid] = aggregate
        self._consumers |= session.consumer_uuids
        return events

    def aggregates(self) -> list[Aggregate]:
        """Every aggregate the group changed, as the group left it."""
        return list(self._changed.values())

    @property
    def provider_ids(self) -> set[UUID]:
        """The streams of the providers the group changed."""
        return {p.id for p in self.providers.values()}


def run(store: EventStore, decide: Callable[[Session], T],
        new_consumers: Iterable[str] = (), intent: Intent | None = None) -> T:
    """Run a command: decide in a fresh session and save, retrying provider-only clashes.

    The first attempt reads providers from this process's cache as they are (a busy host
    then costs no read at all). That is safe because every write that depends on a
    provider's usage appends to the provider's stream, and the store refuses an append on a
    stale copy; providers only read, and refusals decided on cached copies, are checked
    against the store before they count. Likewise it takes the ``new_consumers`` (those the
    caller expects to be new: ``expected_generation=None``, a migration's fresh UUID) as
    absent without reading them, unless this process has seen them: a write creates each
    at version 1, which the store refuses if the stream exists, and then, or when the
    command is refused, the command runs again with everything read. A new instance's claim
    is then one round trip. Later attempts read everything fresh. An error found on such a
    second reading has the store's refusal of the first append as its ``__cause__``.
    """
    session = Session(store)
    metrics = store.metrics  # None unless instrumented (allocation_ledger.metrics)
    refused: IntegrityError | None = None  # the store refused a consumer taken as new
    for attempt in range(1, MAX_ATTEMPTS + 1):
        optimistic = attempt == 1
        if attempt > 1 and metrics is not None:
            metrics.retried()
        session = Session(store, optimistic=optimistic, new_consumers=new_consumers,
                          intent=intent)
        try:
            result = decide(session)
        except LedgerError as err:
            if optimistic and (session.assumed_absent
                               or session.stale_reads(unwritten_only=False)):
                continue
            if metrics is not None:
                metrics.refused(type(err).__name__)
            if refused is not None and err.__cause__ is None:
                raise err from refused
            raise
        if optimistic and session.stale_reads(unwritten_only=True):
            continue
        began = time.perf_counter()
        try:
            session.save()
        except Retry as retry:
            store.contention.clashed(session.written)
            if optimistic and session.assumed_absent and isinstance(
                    retry.__cause__, IntegrityError):
                refused = retry.__cause__
            if not optimistic:
                time.sleep(random.uniform(0, 0.002 * 2 ** min(attempt, 6)))
            continue
        if metrics is not None:
            metrics.appended(time.perf_counter() - began)
        return result
    if metrics is not None:
        metrics.refused(ConcurrentUpdate.__name__)
    raise ConcurrentUpdate(session.provider_uuids, MAX_ATTEMPTS)


__all__ = ["LedgerError", "Session", "run"]
