"""The rebuild benchmark (``benchmarks.rebuild``, run as ``python -m benchmarks.projections``)
measures what it says: every event, the rows the rebuild really wrote, and the per-event
rows."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import inspect

from allocation_ledger import open_ledger
from allocation_ledger.projections.readmodels import ReadModels
from allocation_ledger.projections.store import open_engine
from benchmarks.random_ledger import populate
from benchmarks.rebuild import captured_rows, measure


def test_the_benchmark_counts_the_rows_a_rebuild_writes(tmp_path: Path) -> None:
    with open_ledger(f"sqlite:///{tmp_path / 'ledger.db'}") as ledger:
        populate(ledger, seed=2, steps=200)
        engine = open_engine(ledger.store.env)
        report = ReadModels(ledger.store, engine).rebuild(batch_size=50)
        written, per_event = captured_rows(ledger.store, batch_size=50)
        figures = measure(ledger.store, engine, batch_size=50, repeat=1)
        raw_tables_left = [t for t in inspect(engine).get_table_names()
                           if t.startswith("bench_raw_")]
        head = ledger.store.recorder.max_notification_id()
        engine.dispose()
    streams = sum(len(rows) for batch in written for table, rows in batch
                  if table.name == "proj_streams")
    assert figures.events == report.events == head
    assert figures.written.rows == report.rows_written  # the very rows, streams included
    assert streams > 0
    assert figures.batches == len(written) > 1
    assert figures.per_event.rows > figures.written.rows  # a batch coalesces its events
    assert sum(len(b) for b in per_event) > 0
    assert figures.rebuild > 0 and figures.written.executemany > 0
    assert figures.written.copy is None  # COPY is PostgreSQL's
    assert raw_tables_left == []
