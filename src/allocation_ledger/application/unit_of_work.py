"""The unit of work of one attempt at one command: it loads aggregates, remembers the
version of every stream it read, and commits everything the command changed in one atomic
append, the command's record first; the store's refusal is translated here.

When the store refuses the append (another writer took a (stream, version) first) the two
cases DESIGN §3 separates are told apart: a consumer written meanwhile is a
:class:`ConsumerGenerationConflict` (never retried: the caller re-reads and re-decides); a
migration stream that moved only by context events (its instance claimed or gave up a
destination) changed no generation and counts as a provider clash; a provider the caller
pinned with an expected generation is a :class:`ProviderGenerationConflict`; anything else
is a clash on provider streams alone, :class:`Clash`, which the caller may run again. Whether
the refused append was this command's own, already applied, is the caller's to ask
(:mod:`.command_ids`).

What an attempt may take unread (providers from the process's cache, the consumers the
caller expects to be new as absent) is the write policy's to say (:class:`Trust`); the unit
of work only keeps note of what it took that way, so that a refusal or a clash decided on it
can be checked (:meth:`UnitOfWork.doubtful`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol, TypeVar
from uuid import UUID

from eventsourcing.domain import Aggregate
from eventsourcing.persistence import IntegrityError, ProgrammingError

from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.domain.command import Command, Intent
from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.errors import (
    ConsumerGenerationConflict,
    MigrationNotFound,
    ProviderGenerationConflict,
    ProviderNotFound,
    StoreUnusable,
)
from allocation_ledger.domain.ids import (
    consumer_stream_id,
    provider_name_stream_id,
    provider_stream_id,
    resource_class_stream_id,
    trait_stream_id,
)
from allocation_ledger.domain.migration import Migration
from allocation_ledger.domain.provider import Provider
from allocation_ledger.domain.provider_name import ProviderName
from allocation_ledger.domain.resource_class import ResourceClass
from allocation_ledger.domain.trait import Trait
from allocation_ledger.domain.values import RequestMeta


class Trust(Protocol):
    """What a unit of work asks of the write policy (:class:`~.policy.WritePolicy`)."""

    #: attempts in all before a command gives up
    max_attempts: int

    def reads_cached(self, attempt: int, provider_uuid: str) -> bool:
        """True when ``attempt`` may take this provider from the cache unread."""
        ...

    def takes_turn(self, provider_uuid: str) -> bool:
        """True when an attempt is to take a turn on this provider."""
        ...

    def yields_to(self, provider_uuid: str) -> bool:
        """True when an attempt holding no turn on this provider lets another's go first."""
        ...

    def turn_not_had(self, provider_uuid: str) -> None:
        """A turn on this provider was waited for in vain."""
        ...

    def clashed(self, providers: Iterable[str]) -> None:
        """Another writer wrote to ``providers``."""
        ...


class Clash(Exception):
    """The append clashed on provider streams only (or on a consumer taken as new without a
    read): the command may be run again."""


class UnitOfWork:
    """A :class:`~allocation_ledger.domain.workspace.Workspace` over the event store, for
    one attempt at one command.

    ``intent``: the command it decides, recorded in its append (``None``: it only reads,
    and commits nothing). ``policy`` and ``attempt`` say which providers may be taken from
    the cache; ``new_consumers`` are the consumers taken as absent unread when this process
    has not seen them. ``decided``: the providers as an earlier command of the same group
    commit left them; ``turns``: take turns on contended providers (``adapters/turns.py``;
    :meth:`end_turns` must follow the attempt).
    """

    def __init__(self, store: EventStore, intent: Intent | None = None, *,
                 policy: Trust | None = None, attempt: int = 0,
                 new_consumers: Iterable[str] = (),
                 decided: dict[str, Provider] | None = None, turns: bool = False) -> None:
        #: the event store it reads (also for a scan of the whole ledger, which no version
        #: guards: ``catalog``)
        self.store = store
        self.intent = intent
        self._policy = policy
        self._attempt = attempt
        self._turns = turns and policy is not None
        self._holding = False
        self._decided = decided or {}
        self._new_consumers = frozenset(new_consumers)
        self._assumed_absent: set[str] = set()
        self._cached_reads: set[str] = set()
        self._providers: dict[str, Provider | None] = {}
        self._consumers: dict[str, Consumer | None] = {}
        self._names: dict[str, ProviderName | None] = {}
        self._classes: dict[str, ResourceClass | None] = {}
        self._new: list[Aggregate] = []
        self._traits: dict[str, Trait | None] = {}
        self._expected_providers: dict[str, tuple[int, int]] = {}
        #: consumer -> (stream version, writes that named it, generation) as first read;
        #: all None if absent
        self._loaded: dict[str, tuple[int | None, int | None, int | None]] = {}
        #: the providers the commit wrote to (whether or not the store took it)
        self.written: list[str] = []
        #: how many events the command appended (besides its record)
        self.appended = 0

    @property
    def request(self) -> RequestMeta:
        """Who asked for the command and why (stored with every event)."""
        if self.intent is None:
            raise TypeError("a unit of work opened for reading decides no command")
        return self.intent.meta

    # -- loading: the Workspace protocol --------------------------------------------------

    def provider(self, provider_uuid: str) -> Provider:
        """The live provider; :class:`ProviderNotFound` if absent or deleted."""
        provider = self.any_provider(provider_uuid)
        if provider is None or provider.deleted:
            raise ProviderNotFound(provider_uuid)
        return provider

    def any_provider(self, provider_uuid: str) -> Provider | None:
        """The provider even if deleted, or ``None`` if it was never registered."""
        if provider_uuid not in self._providers:
            self._load_provider(provider_uuid, cached=self._policy is not None
                                and self._policy.reads_cached(self._attempt, provider_uuid))
        return self._providers[provider_uuid]

    def provider_at(self, provider_uuid: str, expected_generation: int) -> Provider:
        """The live provider read fresh, checked against the generation the caller expects
        (:class:`ProviderGenerationConflict`); a clash on it later is that conflict too."""
        if provider_uuid in self._cached_reads:
            self._cached_reads.discard(provider_uuid)
            del self._providers[provider_uuid]
        if provider_uuid not in self._providers:
            self._load_provider(provider_uuid, cached=False)
        provider = self.provider(provider_uuid)
        if provider.generation != expected_generation:
            raise ProviderGenerationConflict(provider_uuid, expected_generation,
                                             provider.generation)
        self._expected_providers[provider_uuid] = (expected_generation, provider.version)
        return provider

    def _load_provider(self, provider_uuid: str, *, cached: bool) -> None:
        if provider_uuid in self._decided:  # decide on the group's state
            self._providers[provider_uuid] = self._decided[provider_uuid].working_copy()
            return
        stream = provider_stream_id(provider_uuid)
        policy = self._policy
        if not cached and self._turns and policy is not None and policy.takes_turn(
                provider_uuid):  # wait for its holder (for the attempt's first turn only)
            waits = not self._holding
            found, held, others = self.store.get_in_turn(stream, wait=waits)
            if waits and not held:  # a holder that hung, or a store without turns
                policy.turn_not_had(provider_uuid)
            self._holding = self._holding or held
            if others:
                policy.clashed([provider_uuid])  # others still write to it: keep taking turns
        else:
            found = self.store.get(stream, cached=cached)
        self._providers[provider_uuid] = found if isinstance(found, Provider) else None
        if cached:
            self._cached_reads.add(provider_uuid)

    def consumer(self, consumer_uuid: str) -> Consumer | None:
        """The consumer, or ``None`` if its stream does not exist."""
        if consumer_uuid not in self._consumers:
            self.load_consumers([consumer_uuid])
        return self._consumers[consumer_uuid]

    def load_consumers(self, consumer_uuids: Iterable[str]) -> None:
        """Load consumers not loaded yet (one query for all of them)."""
        wanted: dict[UUID, str] = {}
        for uuid in consumer_uuids:
            if uuid in self._consumers:
                continue
            if self._assumes_absent(uuid):
                self._remember(uuid, None)
            else:
                wanted[consumer_stream_id(uuid)] = uuid
        if len(wanted) == 1:
            [(stream, uuid)] = wanted.items()
            self._remember(uuid, self.store.get(stream, short=True))
        elif wanted:
            for stream, found in self.store.get_many(wanted).items():
                self._remember(wanted[stream], found)

    def migration(self, migration_uuid: str) -> Migration:
        """The migration; :class:`MigrationNotFound` if the consumer is not one."""
        found = self.consumer(migration_uuid)
        if not isinstance(found, Migration):
            raise MigrationNotFound(migration_uuid)
        return found

    def provider_name(self, name: str) -> ProviderName | None:
        """The name's stream, or ``None`` if no provider ever took the name."""
        if name not in self._names:
            found = self.store.get(provider_name_stream_id(name), short=True)
            self._names[name] = found if isinstance(found, ProviderName) else None
        return self._names[name]

    def resource_class(self, name: str) -> ResourceClass | None:
        """The custom class's aggregate, or ``None`` if its stream does not exist."""
        if name not in self._classes:
            found = self.store.get(resource_class_stream_id(name))
            self._classes[name] = found if isinstance(found, ResourceClass) else None
        return self._classes[name]

    def add(self, aggregate: Consumer | Provider | ProviderName | ResourceClass | Trait) -> None:
        """A new aggregate to commit with the rest."""
        self._new.append(aggregate)
        if isinstance(aggregate, ProviderName):
            self._names[aggregate.name] = aggregate
        elif isinstance(aggregate, Trait):
            self._traits[aggregate.name] = aggregate
        elif isinstance(aggregate, ResourceClass):
            self._classes[aggregate.name] = aggregate
        elif isinstance(aggregate, Provider):
            self._providers[aggregate.uuid] = aggregate
        else:
            self.consumer(aggregate.uuid)  # remember it was absent
            self._consumers[aggregate.uuid] = aggregate

    def trait(self, name: str) -> Trait | None:
        """The custom trait's stream (deleted or not), or ``None`` if it was never created."""
        if name not in self._traits:
            found = self.store.get(trait_stream_id(name), short=True)
            self._traits[name] = found if isinstance(found, Trait) else None
        return self._traits[name]

    def _remember(self, consumer_uuid: str, found: object) -> None:
        """Note a consumer as read (``found``: its aggregate, or anything else when its
        stream does not exist) with its version and generation at the time."""
        consumer = found if isinstance(found, Consumer) else None
        self._consumers[consumer_uuid] = consumer
        self._loaded[consumer_uuid] = (
            (consumer.version, consumer.named_writes, consumer.generation)
            if consumer is not None else (None, None, None)
        )

    def _assumes_absent(self, consumer_uuid: str) -> bool:
        if consumer_uuid not in self._new_consumers or self.store.is_cached(
                consumer_stream_id(consumer_uuid)):
            return False
        self._assumed_absent.add(consumer_uuid)
        return True

    def yields_turn(self) -> bool:
        """True when this attempt holds no turn and another writer holds one on a provider
        it is about to write: it lets that writer go first (noting the providers as
        contended, so that the next attempt waits its turn there), where it would else
        append at once and, writing again and again, leave that writer clashing on every
        attempt. Only a first attempt of a command with more than one yields, where the
        policy says to (``WritePolicy.yields_to``); the next attempt waits for the turn a
        short while. A store that cannot tell without a round trip (PostgreSQL) never
        yields."""
        policy = self._policy
        if (not self._turns or self._holding or policy is None or self._attempt != 1
                or policy.max_attempts <= 1):
            return False
        written = {p.id: p.uuid for p in self._providers.values()
                   if p is not None and p.pending_events and policy.yields_to(p.uuid)}
        held = self.store.turns_held_elsewhere(written) if written else []
        if held:
            policy.clashed(written[stream] for stream in held)
        return bool(held)

    def end_turns(self) -> None:
        """Let go of the providers this attempt held (after its commit, or its failure)."""
        if self._turns:
            self._holding = False
            self.store.end_turns()

    # -- what was taken unread ------------------------------------------------------------

    def doubtful(self, *, unwritten_only: bool) -> bool:
        """True when what this attempt took unread may have misled it: a consumer taken as
        new without a read, or a provider from the cache older than the store's.

        With ``unwritten_only`` (before a commit) a stream the command appends to needs no
        check: the store refuses that append if the copy was stale or the stream exists.
        """
        if self._assumed_absent and not unwritten_only:
            return True
        for uuid in self._cached_reads:
            provider = self._providers.get(uuid)
            if provider is None or (unwritten_only and provider.pending_events):
                continue
            if self.store.stream_version(provider.id) != provider.version:
                return True
        for uuid in self._assumed_absent:
            consumer = self._consumers.get(uuid)
            if consumer is not None and consumer.pending_events:
                continue  # its first event: the store refuses it if the stream exists
            if self.store.stream_version(consumer_stream_id(uuid)) is not None:
                return True
        return False

    @property
    def assumed_absent(self) -> bool:
        """True when a consumer was taken as absent without a read."""
        return bool(self._assumed_absent)

    # -- committing -----------------------------------------------------------------------

    def changed(self) -> list[Aggregate]:
        """Every aggregate with events to append, in the order they are appended: new
        streams, then providers, then consumers, then traits, classes and provider names."""
        changed: list[Aggregate] = [a for a in self._new if not isinstance(a, ProviderName)]
        for kept in (self._providers, self._consumers, self._traits, self._classes, self._names):
            changed += [a for a in kept.values() if a is not None and a.pending_events]
        return list({id(a): a for a in changed}.values())

    @property
    def consumer_uuids(self) -> set[str]:
        """Every consumer this attempt read or created."""
        return set(self._consumers)

    @property
    def provider_uuids(self) -> list[str]:
        """Every provider this attempt read."""
        return sorted(self._providers)

    def commit(self) -> int:
        """Append every pending event, and the command's record, in one transaction; the
        number of events appended (besides the record). :class:`Clash` when the store
        refused it for a clash the command may be run again for."""
        changed = self.changed()
        if not changed and not (self.intent is not None and self.intent.given):
            return 0  # a no-op; recorded only when the caller chose the id (it may retry)
        count = sum(len(a.pending_events) for a in changed)
        self.written = [a.uuid for a in changed if isinstance(a, Provider)]
        try:
            self.store.save(*self.record(changed, count), *changed)
        except IntegrityError as err:
            self._explain_clash(err)
        except ProgrammingError as err:  # e.g. a read-only role: "permission denied ..."
            raise StoreUnusable(f"the store refused the append: {err}") from err
        self.appended = count
        self.store.remember(p for p in changed if isinstance(p, Provider))
        return count

    def record(self, changed: list[Aggregate], count: int) -> list[Command]:
        """The command's record, first in its append: every stream it wrote at the version
        it leaves it, every stream it only read at the version it read, and ``count``."""
        if self.intent is None:
            return []
        written = {str(a.id): a.version for a in changed}
        read = {str(a.id): a.version for a in (*self._providers.values(),
                                                  *self._consumers.values())
                if a is not None and str(a.id) not in written}
        return [self.intent.record(written, read, count)]

    def _explain_clash(self, err: IntegrityError) -> None:
        for uuid, (version, named, generation) in self._loaded.items():
            if uuid in self._assumed_absent:
                continue
            if self.store.stream_version(consumer_stream_id(uuid)) != version:
                current = self.store.get(consumer_stream_id(uuid), short=True)
                current = current if isinstance(current, Consumer) else None
                if current is not None and current.named_writes == named:
                    continue  # only context events: no write named it
                raise ConsumerGenerationConflict(
                    uuid, generation, current.generation if current is not None else None
                ) from err
        if self._assumed_absent:  # perhaps a consumer taken as new exists: read it, decide again
            raise Clash from err
        for uuid, (expected, version) in self._expected_providers.items():
            stream = provider_stream_id(uuid)
            if (self.store.stream_version(stream) or 0) != version:
                current = self.store.get(stream)
                actual = current.generation if isinstance(current, Provider) else 0
                raise ProviderGenerationConflict(uuid, expected, actual) from err
        raise Clash from err


C = TypeVar("C")
#: A command's handler: load through the unit of work, let the domain decide.
Handler = Callable[[UnitOfWork, C], object]
