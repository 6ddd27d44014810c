"""On PostgreSQL a rebuild leaves its tables analysed: until autovacuum gets to them (never,
where it is off) the planner plans them as it last saw them, emptied, and a follower's
lookups of stream names read a projection's whole map."""

from __future__ import annotations

import psycopg
import pytest

from allocation_ledger import open_ledger
from allocation_ledger.projections import tables
from allocation_ledger.projections.readmodels import ReadModels
from benchmarks.random_ledger import populate
from benchmarks.scratch import conninfo

pytestmark = pytest.mark.postgres


def test_a_rebuild_leaves_its_tables_analysed(pg_url: str) -> None:
    with open_ledger(pg_url) as ledger:
        populate(ledger, seed=3, steps=60)
        schema = ledger.store.recorder.names.schema  # type: ignore[attr-defined]
        with ReadModels.of(ledger) as read:
            read.rebuild()
    with psycopg.connect(conninfo(pg_url), autocommit=True) as conn:
        analysed = {row[0]: row[1] for row in conn.execute(
            "SELECT relname, last_analyze FROM pg_stat_user_tables WHERE schemaname = %s",
            (schema,))}
    written = {t.name for t in tables.metadata.sorted_tables} - {tables.tracking.name}
    assert written <= analysed.keys()
    assert {name for name in written if analysed[name] is None} == set()
