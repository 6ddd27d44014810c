"""Measuring rebuilds: events per second, beside the raw rate of inserting the same rows.

:func:`measure` rebuilds every projection of a ledger from zero and times plain batched
inserts of the same rows, batch by batch (one transaction per batch, as the rebuild
commits), into copies of the tables with no key or index: once as one executemany per table
and batch, once with PostgreSQL's COPY. Rounds of each alternate, and each figure is the
best of its rounds. Two sets of rows:

- ``written``: the very rows the rebuild inserted (it coalesces each group's changes over a
  batch, so far fewer rows than events);
- ``per_event``: the rows each event changed, as a projection writing event by event would.

Raw rates are in events per second too (the ledger's events over the time the inserts alone
took), so each ratio says what the projections cost beyond writing rows.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from unittest.mock import patch

from eventsourcing.persistence import StoredEvent
from sqlalchemy import Column, Engine, MetaData, Table, create_engine, event, insert
from sqlalchemy.pool import StaticPool

from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.projections import tables
from allocation_ledger.projections.readmodels import ReadModels
from allocation_ledger.projections.row_groups import GroupTable, RowGroups
from allocation_ledger.projections.store import create_tables, insert_rows, relax_durability

Batches = list[list[tuple[Table, list[dict[str, Any]]]]]


@dataclass(frozen=True)
class Raw:
    """Raw insert rates of one set of rows, in the ledger's events per second."""

    rows: int
    executemany: float
    copy: float | None  # PostgreSQL only

    @property
    def best(self) -> float:
        """The faster of the two methods."""
        return max(self.executemany, self.copy or 0.0)


@dataclass(frozen=True)
class Figures:
    """One store's figures: the rebuild's events per second, and the raw rates of
    inserting the rows it wrote (``written``) and the rows each event changed, as a
    projection writing event by event would insert them (``per_event``)."""

    events: int
    batches: int
    rebuild: float
    written: Raw
    per_event: Raw


def measure(store: EventStore, engine: Engine, batch_size: int, repeat: int = 3) -> Figures:
    """Rebuild into ``engine`` and time the raw inserts of the same rows, ``repeat`` rounds
    of each in turn (a machine that slows down mid-run slows both), keeping each best."""
    read = ReadModels(store, engine)
    written, per_event = captured_rows(store, batch_size)
    methods = [False, True] if engine.dialect.name == "postgresql" else [False]
    rebuilds: list[float] = []
    raw: dict[tuple[str, bool], list[float]] = {}
    events = 0
    with raw_tables(engine) as plain:
        for _ in range(repeat):
            report = read.rebuild(batch_size=batch_size)
            events = report.events
            rebuilds.append(report.seconds)
            for name, batches in (("written", written), ("per_event", per_event)):
                for copy in methods:
                    raw.setdefault((name, copy), []).append(
                        _insert_seconds(engine, plain, batches, copy=copy))

    def rates(name: str, batches: Batches) -> Raw:
        copying = raw.get((name, True))
        return Raw(sum(len(r) for batch in batches for _, r in batch),
                   events / min(raw[name, False]),
                   events / min(copying) if copying else None)

    return Figures(events, len(written), events / min(rebuilds),
                   rates("written", written), rates("per_event", per_event))


def copy_events(source: EventStore, target: EventStore, page: int = 5000) -> int:
    """Append every event of ``source`` to the empty ``target``, in order (the same ledger in
    another store); the number copied."""
    copied, start = 0, 1
    while page_ := source.recorder.select_notifications(start, page):
        target.recorder.insert_events([
            StoredEvent(n.originator_id, n.originator_version, n.topic, n.state) for n in page_
        ])
        copied += len(page_)
        start = page_[-1].id + 1
    return copied


def captured_rows(store: EventStore, batch_size: int) -> tuple[Batches, Batches]:
    """The rows a rebuild inserts, per committed batch, and the rows each event changes
    (new or different rows in the groups it puts), in as many batches (a rebuild into a
    scratch SQLite database)."""
    scratch = create_engine("sqlite+pysqlite://", poolclass=StaticPool)
    create_tables(scratch)
    batches: Batches = [[]]
    changed: list[tuple[Table, dict[str, Any]]] = []
    put = RowGroups.put

    def put_noting_changes(rows: RowGroups, group: GroupTable, key: str,
                           new: Iterable[dict[str, Any]]) -> None:
        new, old = tuple(new), rows.rows(group, key)
        changed.extend((group.table, row) for row in new if row not in old)
        put(rows, group, key, new)

    @event.listens_for(scratch, "before_execute")
    def _capture(_conn: Any, clause: Any, multiparams: Any, params: Any, _opts: Any) -> None:
        table = getattr(clause, "table", None)
        inserted = multiparams or ([params] if params else [])  # one row comes as params
        if getattr(clause, "is_insert", False) and inserted and isinstance(table, Table):
            batches[-1].append((table, [dict(p) for p in inserted]))

    @event.listens_for(scratch, "commit")
    def _split(_conn: Any) -> None:
        if batches[-1]:
            batches.append([])

    with patch.object(RowGroups, "put", put_noting_changes):
        ReadModels(store, scratch).rebuild(batch_size=batch_size)
    scratch.dispose()
    written = [b for b in batches if b and any(t.name != tables.tracking.name for t, _ in b)]
    size = -(-len(changed) // max(len(written), 1))
    per_event: Batches = []
    for start in range(0, len(changed), size):
        by_table: dict[Table, list[dict[str, Any]]] = {}
        for table, row in changed[start:start + size]:
            by_table.setdefault(table, []).append(row)
        per_event.append(list(by_table.items()))
    return written, per_event


@contextmanager
def raw_tables(engine: Engine) -> Iterator[dict[str, Table]]:
    """Plain copies of the read model tables (same columns, no key, no index)."""
    metadata = MetaData()
    raw = {t.name: Table(f"bench_raw_{t.name}", metadata,
                         *(Column(c.name, c.type) for c in t.columns))
           for t in tables.metadata.sorted_tables}
    metadata.create_all(engine)
    try:
        yield raw
    finally:
        metadata.drop_all(engine)


def _insert_seconds(engine: Engine, raw: dict[str, Table], batches: Batches, *,
                    copy: bool) -> float:
    with engine.begin() as conn:
        for table in raw.values():
            conn.execute(table.delete())
    started = time.perf_counter()
    for batch in batches:
        with engine.begin() as conn:
            relax_durability(conn)
            for table, rows in batch:
                if copy:
                    insert_rows(conn, raw[table.name], rows)
                else:
                    conn.execute(insert(raw[table.name]), rows)
    return time.perf_counter() - started
