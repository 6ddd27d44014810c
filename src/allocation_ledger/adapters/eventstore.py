"""The event store: an ``eventsourcing`` application configured for the ledger.

The library provides the store (in-memory, SQLite or PostgreSQL), the unique
(stream, version) key that enforces generations, atomic multi-stream appends, snapshots and
the aggregate cache. This module only chooses its settings.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.domain import Aggregate, OriginatorVersionError
from eventsourcing.persistence import Mapper, Recording, StoredEvent
from eventsourcing.utils import Environment, EnvType, strtobool

from allocation_ledger.adapters.decoding import plain_json
from allocation_ledger.adapters.encoding import PlainMapper
from allocation_ledger.adapters.notifications import stored_event
from allocation_ledger.adapters.postgres import OneTripApplicationRecorder
from allocation_ledger.adapters.turns import Turns
from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.provider import Provider
from allocation_ledger.domain.values import PlainState


def working_copy(aggregate: Aggregate) -> Aggregate:
    """A copy of ``aggregate`` to decide on or to cache: its events, applied to either,
    leave the other as it was (:meth:`~allocation_ledger.domain.values.PlainState.working_copy`:
    a provider's copy shares its containers, which its events replace, never change)."""
    if isinstance(aggregate, PlainState):
        return aggregate.working_copy()
    return copy.deepcopy(aggregate)


def project(aggregate: Any, events: Iterable[Any]) -> Any:
    """Apply events in order. The library's own projector asserts a runtime Protocol per
    event, which on Python 3.11 walks the class hierarchy each time (~10 us an event)."""
    for event in events:
        aggregate = event.mutate(aggregate)
    return aggregate


#: Snapshot every so many events, so a cold process never replays a long stream whole.
SNAPSHOT_INTERVAL = 200


#: Set to "n" in a store's settings to open it for reading: nothing is created (the
#: library's own ``CREATE_TABLE`` is already off for PostgreSQL, whose schema is created here).
CREATE_LEDGER = "CREATE_LEDGER"
#: Set to "y" to open a store for its audit (read only): a chain that reads unkeyed while a
#: chain key is set is read as stored and marked ``recorder.chain_downgraded`` for the
#: audit to report, where any other opener is refused (``chain.check_key``).
AUDIT = "LEDGER_AUDIT"


class EventStore(Application[UUID]):
    """The ledger's event store. ``env`` carries the persistence settings (see ``config``)."""

    name = "Ledger"
    snapshotting_intervals: ClassVar[dict[type[Aggregate], int]] = {  # type: ignore[assignment]
        Provider: SNAPSHOT_INTERVAL,
        Consumer: SNAPSHOT_INTERVAL,
    }

    def __init__(self, env: Mapping[str, str]) -> None:
        # Striped locks: the library fast-forwards a cached aggregate under its own lock but
        # would copy it for the caller after letting go, so a thread could copy an aggregate
        # another thread is fast-forwarding (a torn read). Every read and copy of a cached
        # aggregate here is made under its stream's lock instead. One lock per stripe of
        # streams keeps reads of one stream whole without serialising unrelated streams.
        self._read_locks = [threading.Lock() for _ in range(64)]
        #: command counters (``allocation_ledger.metrics.instrument``); None: not counted
        self.metrics: Any = None
        super().__init__(env=dict(env))
        create = strtobool(env.get(CREATE_LEDGER, "y"))
        if hasattr(self.recorder, "chain_audit"):
            self.recorder.chain_audit = strtobool(env.get(AUDIT, "n"))
        self._turns: Turns = getattr(self.recorder, "turns", None) or Turns()
        if isinstance(self.recorder, OneTripApplicationRecorder):
            self.recorder.states_are_json = plain_json(self.mapper)
            # the schema is created where there is none, and only then (the library's
            # create-on-open is off for PostgreSQL: a role without DDL rights opens it);
            # a store opened to be read creates nothing
            if self.recorder.prepare(create=create) and self.snapshots is not None:
                self.snapshots.recorder.create_table()  # type: ignore[attr-defined]

    def construct_mapper(self) -> Mapper[UUID]:
        """The library's mapper, writing plain events faster (the same bytes,
        :mod:`.encoding`), unless the settings name a mapper of their own."""
        if self.env.get(self.factory.MAPPER_TOPIC):
            return super().construct_mapper()
        return self.factory.mapper(transcoder=self.construct_transcoder(),
                                   mapper_class=PlainMapper)

    def construct_env(self, name: str, env: EnvType | None = None) -> Environment:
        """Only the settings the store URL gave (see ``config``): unlike the library's
        default, nothing from ``os.environ`` can redirect or reconfigure the store."""
        settings = {**type(self).env, **(env or {})}
        if self.snapshotting_intervals:
            settings["IS_SNAPSHOTTING_ENABLED"] = "y"
        return Environment(name, settings)

    def save(self, *objs: Any, **kwargs: Any) -> list[Recording[UUID]]:
        """Append the pending events of these aggregates in one transaction.

        The library's ``save`` less its two runtime Protocol checks per object (each walks
        the class hierarchy on Python 3.11: a tenth of a batch of a thousand claims); only
        aggregates are saved here.
        """
        events: list[Any] = []
        aggregates: list[Aggregate] = []
        for obj in objs:
            if obj is None:
                continue
            if not isinstance(obj, Aggregate):
                raise TypeError(f"only aggregates are saved, not {obj!r}")
            events.extend(obj.collect_events())
            aggregates.append(obj)
        return self.append(events, aggregates, **kwargs)

    def append(self, events: list[Any], aggregates: Iterable[Aggregate],
               **kwargs: Any) -> list[Recording[UUID]]:
        """Append ``events`` (already collected from ``aggregates``) in this order, in one
        transaction, and take the snapshots due: ``save`` for several commands at once."""
        by_id = {aggregate.id: aggregate for aggregate in aggregates}
        recordings = self.events.put(events, **kwargs)
        cache = self.repository.cache
        if cache is not None and not self.repository.fastforward:  # as the library's save
            for stream, aggregate in by_id.items():
                cache.put(stream, aggregate)
        self.take_snapshots_due(events, by_id)
        return recordings

    def take_snapshots_due(self, events: list[Any], aggregates: dict[UUID, Aggregate]) -> None:
        """Snapshot every aggregate whose new version is a multiple of its interval: from
        the aggregate just saved when it is at that version; when the append went past that
        version (several events of one stream, a group commit), from the cached aggregate
        the append started from, brought to that version by the append's own events; else
        read back from the store (the library's ``take_snapshot``)."""
        if self.snapshots is None:
            return
        for event in events:
            aggregate = aggregates.get(event.originator_id)
            if aggregate is None:
                continue
            interval = self.snapshotting_intervals.get(type(aggregate))
            if interval is None or event.originator_version % interval:
                continue
            if aggregate.version != event.originator_version:
                aggregate = self._cached_at(event.originator_id, event.originator_version,
                                            events)
            if aggregate is not None:
                self.snapshots.put([type(aggregate).Snapshot.take(aggregate)])
            else:
                self.take_snapshot(event.originator_id, event.originator_version,
                                   projector_func=project)

    def _cached_at(self, stream: UUID, version: int, appended: list[Any]) -> Aggregate | None:
        """The stream at ``version``: a copy of its cached aggregate with the ``appended``
        events that follow it applied, or ``None`` when the cache does not hold the stream
        from before those events (it was evicted, or read past them meanwhile)."""
        with self._read_locks[stream.int % len(self._read_locks)]:
            cached = self._cached(stream)
            if cached is None:
                return None
            base = working_copy(cached)
        events = [e for e in appended if e.originator_id == stream
                  and base.version < e.originator_version <= version]
        try:
            found: Aggregate = project(base, events)
        except OriginatorVersionError:  # the cached one is older than the append's first
            return None
        return found if found.version == version else None

    def get(
        self, stream_id: UUID | str, *, short: bool = False, cached: bool = False
    ) -> Aggregate | None:
        """The aggregate of a stream at its latest version, or ``None`` if there is none.

        ``short`` streams (consumers: a handful of events each) are read in one query, without
        first looking for a snapshot; a claim for a new consumer then costs one round trip.
        ``cached`` takes the process's cached copy as it is, without asking the store for
        newer events: only for a write that appends to that stream, whose append the store
        refuses if the copy was stale (the write is then run again with fresh reads).
        """
        stream = stream_id if type(stream_id) is UUID else UUID(str(stream_id))
        with self._read_locks[stream.int % len(self._read_locks)]:
            cache = self.repository.cache
            if cached and cache is not None:
                try:
                    hit: Aggregate = working_copy(cache.get(stream))  # type: ignore[arg-type]
                except KeyError:
                    pass
                else:
                    return hit
            if short and cache is not None and not self.is_cached(stream):
                found: Aggregate | None = project(None, self.events.get(stream))
                if found is None:
                    return None
                cache.put(stream, found)
                fresh: Aggregate = working_copy(found)  # the cached one stays pristine
                return fresh
            try:
                aggregate: Aggregate = self.repository.get(stream, projector_func=project,
                                                           deepcopy_from_cache=False)
            except AggregateNotFoundError:
                return None
            if cache is not None:  # the library's copy would be deep; the cached one stays
                aggregate = working_copy(aggregate)  # pristine either way
        return aggregate

    def get_many(self, stream_ids: Iterable[UUID], *, from_snapshots: bool = False,
                 ) -> dict[UUID, Aggregate | None]:
        """Many streams at once, each as :meth:`get` gives it, in one query where the store
        has a query for many streams (PostgreSQL): a cached stream is brought up to date
        with the events after its cached version, one not cached is read whole (short
        streams: consumers). With ``from_snapshots`` a stream not cached is read as
        :meth:`get` reads it, from its last snapshot, in a query of its own (long streams:
        providers, which a process reads so once and then keeps in its cache)."""
        wanted = list(dict.fromkeys(stream_ids))
        found: dict[UUID, Aggregate | None] = {}
        known: dict[UUID, Aggregate] = {}
        for stream in wanted:
            cached = self._cached(stream)
            if cached is not None:
                known[stream] = cached
            elif from_snapshots and self.snapshots is not None:
                found[stream] = self.get(stream)
        rest = [stream for stream in wanted if stream not in found]
        after = {s: known[s].version if s in known else 0 for s in rest}
        moved: list[UUID] = []  # streams another thread cached or advanced meanwhile
        for stream, stored in self._select_streams(rest, list(after.values())).items():
            events = [self.mapper.to_domain_event(e) for e in stored]
            base = known.get(stream)
            with self._read_locks[stream.int % len(self._read_locks)]:
                current = self._cached(stream)
                if base is None and current is None:  # not cached: read whole
                    aggregate = project(None, events)
                    if aggregate is not None and self.repository.cache is not None:
                        self.repository.cache.put(stream, aggregate)
                elif current is not None and current is base and (
                        base.version == after[stream]):  # (no other thread advanced it)
                    aggregate = project(base, events)  # the cached copy, brought up to date
                else:
                    moved.append(stream)
                    continue
            found[stream] = None if aggregate is None else working_copy(aggregate)
        for stream in moved:  # read as get reads it
            found[stream] = self.get(stream)
        return {stream: found[stream] for stream in wanted}

    def _select_streams(self, streams: list[UUID], after: list[int],
                        ) -> dict[UUID, list[StoredEvent]]:
        recorder = self.recorder
        if isinstance(recorder, OneTripApplicationRecorder):
            return recorder.select_streams(streams, after)
        # SQLite and memory: no network round trips to save
        return {stream: list(recorder.select_events(stream, gt=version or None))
                for stream, version in zip(streams, after, strict=True)}

    def remember(self, aggregates: Iterable[Aggregate]) -> None:
        """Cache these just-saved aggregates, so the next write starts from them."""
        cache = self.repository.cache
        if cache is None:
            return
        for aggregate in aggregates:
            with self._read_locks[aggregate.id.int % len(self._read_locks)]:
                current = self._cached(aggregate.id)
                if current is None or current.version < aggregate.version:
                    cache.put(aggregate.id, working_copy(aggregate))

    def take_turn(self, stream_id: UUID, *, wait: bool) -> bool:
        """Hold ``stream_id`` for this thread until :meth:`end_turns`, so that other
        writers that want it wait (``adapters/turns.py``); True if held. With ``wait``
        false only a free stream is taken; a store without turns holds nothing."""
        return self._turns.take(stream_id, wait=wait)

    def get_in_turn(self, stream_id: UUID, *,
                    wait: bool) -> tuple[Aggregate | None, bool, bool]:
        """The stream's aggregate read fresh after taking its turn (:meth:`take_turn`),
        whether the turn is held, and whether the read found events this process had not
        cached (other writers wrote). A cached stream is brought up to date with the events
        read in the same round trip as the turn, where the store can. Whatever fails after
        the turn was taken lets go of the thread's turns."""
        known = self.cached_version(stream_id)
        if known is None:
            held, rows = self.take_turn(stream_id, wait=wait), None
        else:
            held, rows = self._turns.take_reading(stream_id, wait=wait, after=known)
        try:
            if rows is not None:
                with self._read_locks[stream_id.int % len(self._read_locks)]:
                    cached = self._cached(stream_id)
                    if cached is not None and cached.version == known:
                        aggregate = project(cached, (
                            self.mapper.to_domain_event(stored_event(*row)) for row in rows))
                        return working_copy(aggregate), held, bool(rows)
            before = self.cached_version(stream_id)  # not read with the turn, or moved
            found = self.get(stream_id)
        except BaseException:
            self.end_turns()
            raise
        others = found is not None and before is not None and found.version != before
        return found, held, others

    def end_turns(self) -> None:
        """Let go of every stream this thread holds."""
        self._turns.end()

    def turns_held_elsewhere(self, streams: Iterable[UUID]) -> list[UUID]:
        """Those of ``streams`` another writer holds a turn on (where the store can tell
        without a round trip: SQLite; elsewhere none)."""
        return self._turns.held_elsewhere(streams)

    def _cached(self, stream_id: UUID) -> Aggregate | None:
        """This process's cached aggregate of a stream, as it is (``None``: not cached)."""
        cache = self.repository.cache
        if cache is None:
            return None
        try:
            found: Aggregate = cache.get(stream_id)  # type: ignore[assignment]
        except KeyError:
            return None
        return found

    def is_cached(self, stream_id: UUID) -> bool:
        """True when this process's cache holds the stream (then it exists)."""
        return self._cached(stream_id) is not None

    def cached_version(self, stream_id: UUID) -> int | None:
        """The version of this process's cached copy of a stream (``None``: not cached)."""
        found = self._cached(stream_id)
        return None if found is None else found.version

    def stream_version(self, stream_id: UUID) -> int | None:
        """The version of a stream's last event, read straight from the store."""
        last = self.recorder.select_events(stream_id, desc=True, limit=1)
        return last[0].originator_version if last else None
