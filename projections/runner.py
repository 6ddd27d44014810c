"""The runner: catch projections up with the ledger, then follow it, exactly once.

Events are read once, in ledger order, decoded once, and handed to every projection that is
behind them. Their rows are written in batches: one transaction per batch holds every
projection's changed groups and its advanced position, so a batch is there entirely or not
at all, and an event at or below a projection's stored position is never applied again.

A batch only ever ends where a command ended, so no projection ever shows half a command.
The ledger records each command in one transaction, so an end is certain where the ledger's
head was (the last event recorded when it was read) or where the ``request`` stamped on
every event of a command changes (each command stamps a fresh ``command_id`` into it).
Batches grow past ``batch_size`` until such an end.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from eventsourcing.application import Application
from eventsourcing.persistence import PersistenceError
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from projections import reading, tracking
from projections.feed import Feed
from projections.projection import Projection
from projections.reading import Event
from projections.store import relax_durability
from projections.workset import Workset

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]  # (position committed, ledger head), after each commit


class PositionMoved(Exception):
    """Raised when another runner moved a projection's position first: start again."""


class Runner:
    """Keeps ``projections`` up to date with the ledger in ``store``."""

    def __init__(
        self,
        store: Application[Any],
        engine: Engine,
        projections: Sequence[Projection],
        *,
        batch_size: int = 5000,
        page_size: int = 5000,
        max_cached_groups: int = 200_000,
        progress: Progress | None = None,
    ) -> None:
        self.store = store
        self.engine = engine
        self.projections = tuple(projections)
        self.batch_size = batch_size
        self.page_size = page_size
        self.max_cached_groups = max_cached_groups
        self.progress = progress
        self._head = 0
        self._positions: dict[str, int] = {}
        self._worksets: dict[str, Workset] = {}
        self._seen = 0
        self._pending = 0
        self._last_request: object = None
        self._stop = threading.Event()  # the caller's, during a run
        self.events_applied = 0
        self.rows_written = 0
        self.conflicts = 0  # commits refused because another runner moved a position
        for p in self.projections:
            tracking.ensure(engine, p.name, store.name)
        self._load()

    @property
    def positions(self) -> dict[str, int]:
        """Each projection's committed position."""
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
        while not self._stop.is_set():
            head = self._head = self.head()
            if head <= self._seen:
                if self._pending:  # what a subscription delivered ends at the head
                    self._commit()
                return self._seen
            try:
                for page in reading.pages(self.store, self._seen, head, self.page_size):
                    if self._stop.is_set():
                        break
                    self._process(page, at_head=page[-1][0] == head)
            except PositionMoved:
                self.conflicts += 1
                log.info("another runner moved a position; resuming from %s", self._positions)
        return min(self._positions.values())

    def follow(self, stop: threading.Event, poll_interval: float = 1.0) -> None:
        """Catch up, then apply new events as they are recorded, until ``stop`` is set.

        New events come from the library's subscription where the store has one
        (PostgreSQL's LISTEN/NOTIFY); every ``poll_interval`` seconds without news the
        runner polls as well, so a lost notification only delays it.
        """
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
                self._process(reading.decode(self.store, chunk),
                              at_head=self._head == chunk[-1].id)
        finally:
            if feed is not None:
                feed.close()

    # -- reading, applying, committing -------------------------------------------------

    def _process(self, page: Sequence[Event], *, at_head: bool) -> None:
        """Apply the events after ``_seen`` (the next ones); commit at command ends."""
        events = [(position, event) for position, event in page if position > self._seen]
        for rows in self._worksets.values():
            rows.trim(self.max_cached_groups)
        self._prefetch(events)
        # Positions only move up to ``_seen`` while this runs, so they stay below the
        # events to come (a refused commit raises and ends it).
        targets = [(p, self._worksets[p.name], self._positions[p.name])
                   for p in self.projections]
        steps: dict[type, list[tuple[Callable[[Any, Workset], None], Workset, int]]] = {}
        for position, event in events:
            if self._stop.is_set() and not self._pending:
                return  # stopped, and everything applied so far is committed
            request = getattr(event, "request", None)
            if self._pending >= self.batch_size and request != self._last_request:
                self._commit()
            kind = type(event)
            if kind not in steps:  # the handlers of each type, looked up once per page
                steps[kind] = [(handler, rows, since) for projection, rows, since in targets
                               if (handler := projection.handler_for(event)) is not None]
            for handler, rows, since in steps[kind]:
                if position > since:
                    handler(event, rows)
            self._seen, self._last_request = position, request
            self._pending += 1
            self.events_applied += 1
        if at_head and self._pending:
            self._commit()

    def _prefetch(self, events: Sequence[Event]) -> None:
        wanted = {
            p.name: [e.originator_id for n, e in events
                     if n > self._positions[p.name] and p.handles(e)]
            for p in self.projections if not self._worksets[p.name].complete
        }
        if not any(wanted.values()):
            return
        with self.engine.connect() as conn:
            for name, stream_ids in wanted.items():
                self._worksets[name].prefetch(conn, stream_ids)

    def _commit(self) -> None:
        moved = [p.name for p in self.projections if self._seen > self._positions[p.name]]
        try:
            with self.engine.begin() as conn:
                relax_durability(conn)
                for name in moved:
                    if not tracking.advance(conn, name, self._positions[name], self._seen):
                        raise PositionMoved(name)
                    self.rows_written += self._worksets[name].flush(conn)
        except Exception:
            self._load()  # the database holds the truth: start again from it
            raise
        for name in moved:
            self._positions[name] = self._seen
            self._worksets[name].committed()
        self._pending = 0
        if self.progress:
            self.progress(self._seen, max(self._head, self._seen))

    def _load(self) -> None:
        """Read the stored positions and start each projection's cache afresh."""
        with self.engine.connect() as conn:
            self._positions = {p.name: tracking.position(conn, p.name) for p in self.projections}
        self._worksets = {
            p.name: Workset(p.name, p.groups, complete=self._positions[p.name] == 0)
            for p in self.projections
        }
        self._seen = min(self._positions.values(), default=0)
        self._pending = 0
        self._last_request = None
