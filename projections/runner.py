"""The runner: catch projections up with the ledger, then follow it, exactly once.

Events are read once, in ledger order, decoded once, and handed to every projection that is
behind them. Their rows are written in batches: one transaction per batch holds every
projection's changed groups and its advanced position, so a batch is there entirely or not
at all, and an event at or below a projection's stored position is never applied again.

A batch only ever ends where a command ended, so no projection ever shows half a command:
where the ledger's head was (the last event recorded when it was read), or where
:class:`~allocation_ledger.domain.command.CommandEnds` sees one (the command id stamped on
every event of a command changes). Batches grow past ``batch_size`` until such an end.

On PostgreSQL a batch is written by a thread of its own while the runner applies the events
of the next one (one batch in flight at most; a failed write makes the runner start again
from what the database holds), so the database's work overlaps the handlers'.

Why not the library's ``eventsourcing.projection.ProjectionRunner`` (9.5): it follows a
store only through ``recorder.subscribe()``, which the library's SQLite recorder does not
implement (so ``projections follow`` could not run on the default store); it builds its
view through ``InfrastructureFactory.tracking_recorder``, which takes only subclasses of the
library's own tracking recorders (not our tables, COPY, or read models in another database
through ``PROJECTIONS_URL``); it runs one projection per runner, each with its own
subscription, so four read models would decode every event four times and advance their
positions in four transactions instead of one; it hands over one event at a time with no
"caught up" signal, so a batch could not end where a command ends (half commands shown,
one transaction per event instead of one per batch); and an event its mapper cannot decode
ends its thread without a position, where this runner reports the unreadable event at its
position and where each read model stopped.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import nullcontext, suppress
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from eventsourcing.application import Application
from eventsourcing.persistence import PersistenceError
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from allocation_ledger.adapters.notifications import chain_hash
from allocation_ledger.domain.command import CommandEnds
from allocation_ledger.domain.errors import ReadModelsDiverged
from allocation_ledger.projections import reading, tracking
from allocation_ledger.projections.binding import binding_problem
from allocation_ledger.projections.feed import Feed
from allocation_ledger.projections.projection import Projection
from allocation_ledger.projections.reading import Event, collector_paused
from allocation_ledger.projections.row_groups import Changes, RowGroups
from allocation_ledger.projections.store import relax_durability

log = logging.getLogger(__name__)

#: A catch-up this many events behind pauses the cyclic garbage collector (see
#: :func:`collector_paused`); a follower's small ones leave it alone.
PAUSE_GC_FROM = 10_000
#: Events a batch holds at least (it ends at the next command end). A batch's rows are
#: written by one delete and one insert per group it touched, and its commit pays for the
#: pages its inserts dirtied: a rebuild of 1,000,000 events on SQLite took 16.5 s of CPU
#: with batches of 20,000 against 19.5 s with 5,000, for about 6 MiB more at its peak
#: (``docs/benchmarks.md``, Replay memory).
BATCH_SIZE = 20_000
#: Groups (and stream names) a projection's cache holds before it lets those put longest ago go:
#: about a kilobyte each, so a catch-up of any length stays within tens of megabytes.
MAX_CACHED_GROUPS = 50_000

Progress = Callable[[int, int], None]  # (position committed, ledger head), after each commit


@dataclass(frozen=True)
class Batch:
    """The changes of every projection that moved, up to ``position`` (its commit)."""

    position: int
    head: int  # the ledger's head when it ended (for progress)
    changes: list[tuple[str, int, Changes]]  # (projection, position it moves from, rows)
    chain_hash: bytes | None = None  # the ledger's at ``position``: the history followed


def bound_positions(store: Any, engine: Engine,
                    projections: Sequence[Projection]) -> dict[str, int]:
    """Each projection's stored position; :class:`ReadModelsDiverged` if one was built
    from a history the ledger no longer has (checked by the chain hash it recorded)."""
    with engine.connect() as conn:
        followed = {p.name: tracking.followed(conn, p.name) for p in projections}
    checked: set[tuple[int, bytes | None]] = set()  # read models at one place: one look
    for name, (at, hashed) in followed.items():
        if (at, hashed) in checked:
            continue
        problem = binding_problem(store, name, at, hashed)
        if problem is not None:
            raise ReadModelsDiverged(problem, projection=name, position=at)
        checked.add((at, hashed))
    return {name: at for name, (at, _) in followed.items()}


class PositionMoved(Exception):
    """Raised when another runner moved a projection's position first: start again."""


class Runner:
    """Keeps ``projections`` up to date with the ledger in ``store``.

    ``pause_gc`` turns Python's cyclic garbage collector off while it catches up on
    ``PAUSE_GC_FROM`` events or more (see :func:`collector_paused`); pass ``False`` to
    leave it alone.
    """

    def __init__(
        self,
        store: Application[Any],
        engine: Engine,
        projections: Sequence[Projection],
        *,
        batch_size: int = BATCH_SIZE,
        page_size: int = 5000,
        max_cached_groups: int = MAX_CACHED_GROUPS,
        progress: Progress | None = None,
        pause_gc: bool = True,
    ) -> None:
        self.store = store
        self.engine = engine
        self.projections = tuple(projections)
        self.batch_size = batch_size
        self.page_size = page_size
        self.max_cached_groups = max_cached_groups
        self.progress = progress
        self.pause_gc = pause_gc
        self._head = 0
        self._positions: dict[str, int] = {}
        self._row_groups: dict[str, RowGroups] = {}
        self._hashes: dict[int, bytes | None] = {}  # chain hashes of events read, by position
        self._seen = 0
        self._pending = 0
        self._commands = CommandEnds()  # where the events' commands certainly end
        self._stop = threading.Event()  # the caller's, during a run
        self.events_applied = 0
        self.rows_written = 0
        self.conflicts = 0  # commits refused because another runner moved a position
        # A batch is written in a thread of its own while the next one is applied, on
        # PostgreSQL (a connection per thread, and its round trips release the GIL); SQLite
        # has one writer at a time anyway, and an in-memory database one shared connection.
        self._overlap = engine.dialect.name == "postgresql"
        self._writer: ThreadPoolExecutor | None = None
        self._writing: tuple[Batch, Future[int]] | None = None
        for p in self.projections:
            tracking.ensure(engine, p.name, store.name)
        self._load()

    @property
    def positions(self) -> dict[str, int]:
        """Each projection's position: committed, once a run (``catch_up``, ``follow``) has
        returned; during one it may include a batch still being written."""
        return dict(self._positions)

    def head(self) -> int:
        """The ledger's last notification id (0 when empty)."""
        return self.store.recorder.max_notification_id() or 0

    # -- catching up and following -----------------------------------------------------

    def catch_up(self, stop: threading.Event | None = None) -> int:
        """Apply everything recorded so far; the position reached (the ledger's head).

        Setting ``stop`` ends the run at the next commit: what was committed stays.
        """
        self._stop = stop or threading.Event()
        try:
            reached = self._catch_up()
        except BaseException:
            self._stop_writer(quiet=True)  # the error that ended the run is the one to see
            raise
        self._stop_writer()
        return reached

    def _catch_up(self) -> int:
        while True:
            try:
                if self._stop.is_set() or self._caught_up():
                    self._drain()  # the last batch, written or refused
                    return self._seen if not self._stop.is_set() else min(
                        self._positions.values())
            except PositionMoved:
                self.conflicts += 1
                log.info("another runner moved a position; resuming from %s", self._positions)

    def _caught_up(self) -> bool:
        """Apply what was recorded up to the ledger's head as it is now (pages of events,
        batches ending at command ends); True when there was nothing left to apply."""
        head = self._head = self.head()
        if head < self._seen:
            raise ReadModelsDiverged(
                f"the ledger ends at {head}, behind the read models at {self._seen}: it was "
                "truncated or restored from an older copy; rebuild the read models "
                "(projections rebuild)", position=self._seen)
        if head <= self._seen:
            if self._pending:  # what a subscription delivered ends at the head
                self._commit()
            return True
        large = self.pause_gc and head - self._seen >= PAUSE_GC_FROM
        with collector_paused() if large else nullcontext():
            for page in reading.pages(self.store, self._seen, head, self.page_size,
                                      self._hashes):
                if self._stop.is_set():
                    break
                self._process(page, at_head=page[-1][0] == head)
        return False

    def follow(self, stop: threading.Event, poll_interval: float = 1.0) -> None:
        """Catch up, then apply new events as they are recorded, until ``stop`` is set.

        New events come from the library's subscription where the store has one
        (PostgreSQL's LISTEN/NOTIFY); every ``poll_interval`` seconds without news the
        runner polls as well, so a lost notification only delays it.
        """
        try:
            self._follow_until(stop, poll_interval)
        except BaseException:
            self._stop_writer(quiet=True)
            raise
        try:
            self._stop_writer()
        except (SQLAlchemyError, PersistenceError, OSError, PositionMoved) as err:
            # stopped while the last batch was written, and it failed: the tables hold the
            # batches before it, and the next run resumes from there
            log.warning("projection runner: the last batch was not written (%s)", err)

    def _follow_until(self, stop: threading.Event, poll_interval: float) -> None:
        failed = False
        while not stop.is_set():
            try:
                if failed:  # a database went away: start again from what it holds
                    self._load()
                    failed = False
                self.catch_up(stop)
                self._follow(stop, poll_interval)
            except PositionMoved:
                self.conflicts += 1
            except (SQLAlchemyError, PersistenceError, OSError) as err:
                log.warning("projection runner: %s; retrying in %ss", err, poll_interval)
                failed = True
                stop.wait(poll_interval)

    def _follow(self, stop: threading.Event, poll_interval: float) -> None:
        feed = Feed.open(self.store.recorder, self._seen)
        try:
            while not stop.is_set():
                if feed is None or not feed.alive:
                    stop.wait(poll_interval)
                    self.catch_up(stop)
                    if feed is not None:  # a failed subscription: subscribe again
                        return
                    continue
                chunk = [n for n in feed.take(poll_interval, stop) if n.id > self._seen]
                if not chunk:
                    self.catch_up(stop)
                    continue
                self._head = self.head()
                self._process(reading.decode(self.store, chunk, self._hashes),
                              at_head=self._head == chunk[-1].id)
        finally:
            if feed is not None:
                feed.close()

    # -- reading, applying, committing -------------------------------------------------

    def _process(self, page: Sequence[Event], *, at_head: bool) -> None:
        """Apply the events after ``_seen`` (the next ones); commit at command ends."""
        events = [(position, event) for position, event in page if position > self._seen]
        for rows in self._row_groups.values():
            rows.trim(self.max_cached_groups)
        self._prefetch(events)
        # Positions only move up to ``_seen`` while this runs, so they stay below the
        # events to come (a refused commit raises and ends it).
        targets = [(p, self._row_groups[p.name], self._positions[p.name])
                   for p in self.projections]
        steps: dict[type, list[tuple[Callable[[Any, RowGroups], None], RowGroups, int]]] = {}
        for position, event in events:
            if self._stop.is_set() and not self._pending:
                return  # stopped, and everything applied so far is committed
            opens_command = self._commands.opens_command(event)  # sees every event
            if self._pending >= self.batch_size and opens_command:
                self._commit(wait=False)
            kind = type(event)
            if kind not in steps:  # the handlers of each type, looked up once per page
                steps[kind] = [(handler, rows, since) for projection, rows, since in targets
                               if (handler := projection.rule_for(event)) is not None]
            for handler, rows, since in steps[kind]:
                if position > since:
                    handler(event, rows)
            self._seen = position
            self._pending += 1
            self.events_applied += 1
        if at_head and self._pending:
            self._commit()

    def _prefetch(self, events: Sequence[Event]) -> None:
        """Read back the names and groups of the streams these events name, where a trimmed
        cache lacks them. A stream created among the events is skipped: it has nothing
        stored yet (a handler touches only its own stream's groups), and its name comes
        with its first event. Most streams of a long ledger are consumers created and
        emptied between two pages: without the skip, every page of a rebuild past the cache's
        size read the database, and on PostgreSQL waited for the batch in flight first."""
        behind = [p for p in self.projections if not self._row_groups[p.name].complete]
        if not behind:
            return
        # One pass over the events for the projections at one position (in a rebuild, all
        # of them): each stream once with each type of its events (a host has thousands
        # of events in a page), keyed by the stream id's ``int`` (a UUID hashes and
        # compares in Python code, a tenth of a rebuild's prefetch).
        seen: dict[int, tuple[set[int], dict[tuple[int, type], Any]]] = {}
        for since in {self._positions[p.name] for p in behind}:
            created: set[int] = set()
            streams: dict[tuple[int, type], Any] = {}
            for n, e in events:
                if n > since:
                    if e.originator_version == 1:
                        created.add(e.originator_id.int)
                    streams[(e.originator_id.int, type(e))] = e
            seen[since] = (created, streams)
        wanted: dict[str, set[UUID]] = {}
        for p in behind:
            created, streams = seen[self._positions[p.name]]
            wanted[p.name] = {e.originator_id for (stream, _), e in streams.items()
                              if stream not in created and p.handles(e)}
        if not any(self._row_groups[name].needs_read(ids) for name, ids in wanted.items()):
            return
        self._drain()  # what it reads must include the batch in flight
        with self.engine.connect() as conn:
            for name, stream_ids in wanted.items():
                self._row_groups[name].prefetch(conn, stream_ids)

    def _commit(self, *, wait: bool = True) -> None:
        """End the batch at ``_seen``: hand every projection's changes and new position to
        the writer. With ``wait`` false the runner goes on applying events while it writes
        (on PostgreSQL; at most one batch in flight: the next commit waits for it)."""
        self._drain()
        moved = [p.name for p in self.projections if self._seen > self._positions[p.name]]
        batch = Batch(self._seen, max(self._head, self._seen),
                      [(name, self._positions[name], self._row_groups[name].take())
                       for name in moved], self._chain_hash(self._seen) if moved else None)
        for name in moved:
            self._positions[name] = self._seen
        self._pending = 0
        if not self._overlap:  # written here and now
            self._written(batch, lambda: self._write(batch))
            return
        if self._writer is None:
            self._writer = ThreadPoolExecutor(1, thread_name_prefix="projection-writer")
        self._writing = (batch, self._writer.submit(self._write, batch))
        if wait:
            self._drain()

    def _write(self, batch: Batch) -> int:
        """Write one batch in one transaction (in the writer's thread, if there is one)."""
        written = 0
        with self.engine.begin() as conn:
            relax_durability(conn)
            for name, since, changes in batch.changes:
                if not tracking.advance(conn, name, since, batch.position, batch.chain_hash):
                    raise PositionMoved(name)
                written += changes.write(conn)
        return written

    def _chain_hash(self, position: int) -> bytes | None:
        """The ledger's chain hash at ``position`` (``None`` where it keeps none): as read
        with the events (those up to it are then forgotten), else asked for."""
        if position in self._hashes:
            found = self._hashes[position]
            for seen in [p for p in self._hashes if p <= position]:
                del self._hashes[seen]
            return found
        stored = self.store.recorder.select_notifications(position, 1)
        return chain_hash(stored[0]) if stored and stored[0].id == position else None

    def _drain(self) -> None:
        """Wait for the batch in flight; if it failed, start again from the database."""
        if self._writing is None:
            return
        batch, future = self._writing
        self._writing = None
        self._written(batch, future.result)

    def _written(self, batch: Batch, rows: Callable[[], int]) -> None:
        """Count the rows of a batch written (``rows`` raises if writing it failed: then
        start again from what the database holds) and report progress."""
        try:
            self.rows_written += rows()
        except BaseException:
            self._load()
            raise
        if self.progress:
            self.progress(batch.position, batch.head)

    def _stop_writer(self, *, quiet: bool = False) -> None:
        """Wait for the batch in flight and end the writer's thread (``quiet``: a failed
        batch only makes the runner reload; another error is on its way already)."""
        try:
            with suppress(Exception) if quiet else nullcontext():
                self._drain()
        finally:
            if self._writer is not None:
                self._writer.shutdown()
                self._writer = None

    def _load(self) -> None:
        """Read the stored positions and start each projection's cache afresh."""
        if self._writing is not None:  # a batch in flight ends before the database is read
            wait([self._writing[1]])
            self._writing = None
        self._positions = bound_positions(self.store, self.engine, self.projections)
        self._row_groups = {
            p.name: RowGroups(p.name, p.groups, complete=self._positions[p.name] == 0)
            for p in self.projections
        }
        self._seen = min(self._positions.values(), default=0)
        self._pending = 0
        self._commands = CommandEnds()
