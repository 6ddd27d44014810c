"""The read side of one ledger: its projections' tables, and rebuilding, resuming,
following and waiting for them.

    read = ReadModels.of(ledger)            # the ledger's own database
    read.resume()                           # catch up from the stored positions
    read.wait(ledger_position(ledger))      # read your own writes
    queries.host_usage(read.engine, host)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import Engine, Table, delete, func, select

from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.projections import catalog, tables, tracking
from allocation_ledger.projections.runner import Runner, bound_positions
from allocation_ledger.projections.store import analyse, empty, open_engine


@dataclass(frozen=True)
class Report:
    """What a run did: where each projection got to and what its tables hold."""

    positions: dict[str, int]
    head: int
    events: int
    rows_written: int
    seconds: float
    counts: dict[str, int]

    @property
    def events_per_second(self) -> float:
        """Throughput of the run."""
        return self.events / self.seconds if self.seconds > 0 else 0.0


class OpenLedger(Protocol):
    """An open ledger: anything that holds its event store (the service's ``Ledger``)."""

    @property
    def store(self) -> EventStore:
        """The ledger's event store."""
        ...


def ledger_position(ledger: OpenLedger) -> int:
    """The ledger's last notification id: wait for it to read your own writes."""
    return ledger.store.recorder.max_notification_id() or 0


class ReadModels:
    """The projections (all, or those named) of the ledger in ``store``, in ``engine``."""

    def __init__(self, store: EventStore, engine: Engine,
                 names: Iterable[str] | None = None, *, owns_store: bool = False) -> None:
        self.store = store
        self.engine = engine
        self.projections = catalog.select(names)
        self._owns_store = owns_store

    @classmethod
    def of(cls, ledger: OpenLedger, url: str | None = None,
           names: Iterable[str] | None = None) -> ReadModels:
        """The read models of an open ledger (``url``: keep them in another store)."""
        return cls(ledger.store, open_engine(ledger.store.env, url), names)


    def close(self) -> None:
        """Release the connections."""
        self.engine.dispose()
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> ReadModels:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- running -----------------------------------------------------------------------

    def runner(self, **options: Any) -> Runner:
        """A runner for these projections (``batch_size``, ``page_size``...)."""
        return Runner(self.store, self.engine, self.projections, **options)

    def resume(self, stop: threading.Event | None = None, **options: Any) -> Report:
        """Catch up from the stored positions to the ledger's head (``options``: see
        :class:`~.runner.Runner`, e.g. ``progress``, ``batch_size``)."""
        started = time.perf_counter()
        runner = self.runner(**options)
        runner.catch_up(stop)
        return self._report(runner, time.perf_counter() - started)

    def rebuild(self, stop: threading.Event | None = None, **options: Any) -> Report:
        """Empty the tables and replay the whole ledger into them (then, on PostgreSQL,
        analyse them: ``store.analyse``)."""
        self.reset()
        report = self.resume(stop, **options)
        analyse(self.engine, [*self._owned(), tables.streams])
        return report

    def follow(self, stop: threading.Event, poll_interval: float = 1.0,
               **options: Any) -> None:
        """Catch up, then keep up with new events until ``stop`` is set."""
        self.runner(**options).follow(stop, poll_interval)

    def reset(self) -> None:
        """Delete every row of these projections and set their positions to 0, at once."""
        for p in self.projections:
            tracking.ensure(self.engine, p.name, self.store.name)
        owned = self._owned()
        everything = {p.name for p in self.projections} == set(catalog.NAMES)
        with self.engine.begin() as conn:
            for p in self.projections:
                tracking.reset(conn, p.name)
            empty(conn, [*owned, tables.streams] if everything else owned)
            if not everything:
                conn.execute(delete(tables.streams).where(
                    tables.streams.c.projection.in_([p.name for p in self.projections])))

    def _owned(self) -> list[Table]:
        return [group.table for p in self.projections for group in p.groups]

    # -- reading -----------------------------------------------------------------------

    def caught_up(self) -> bool:
        """True when every projection stands at the ledger's head (``ReadModelsDiverged``
        if one followed a history the ledger no longer has): a few small reads, where
        :meth:`resume` starts a runner and reports the tables' sizes."""
        positions = self.positions()
        return set(positions.values()) == {self.store.recorder.max_notification_id() or 0}

    def positions(self) -> dict[str, int]:
        """Each projection's stored position; ``ReadModelsDiverged`` if one followed a
        history the ledger no longer has."""
        return bound_positions(self.store, self.engine, self.projections)

    def wait(self, position: int, timeout: float = 10.0) -> None:
        """Block until every projection shows the ledger up to ``position`` (read your own
        writes); ``TimeoutError`` after ``timeout`` seconds."""
        for p in self.projections:
            recorder = tracking.ProjectionTracking(self.engine, p.name)
            recorder.wait(self.store.name, position if position > 0 else None, timeout)

    def counts(self) -> dict[str, int]:
        """Rows in each table of these projections."""
        with self.engine.connect() as conn:
            return {
                group.name: int(conn.execute(select(func.count()).select_from(group.table))
                                .scalar_one())
                for p in self.projections for group in p.groups
            }

    def _report(self, runner: Runner, seconds: float) -> Report:
        return Report(positions=runner.positions, head=runner.head(),
                      events=runner.events_applied, rows_written=runner.rows_written,
                      seconds=seconds, counts=self.counts())
