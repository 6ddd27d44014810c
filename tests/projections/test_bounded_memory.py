"""A rebuild holds the read models' state, not the ledger's history (issue 16).

The ledgers here are grown as the replay-memory benchmark grows them (``benchmarks/growth.py``):
claim-and-release cycles on one host, appended thousands of commands at a time, each
command's events stamped with its own command id (where a batch may end). The history grows;
what the cloud holds does not.
"""

from __future__ import annotations

import gc

import pytest

from allocation_ledger import open_ledger
from allocation_ledger.projections import runner
from allocation_ledger.projections.readmodels import ReadModels
from allocation_ledger.projections.store import open_engine
from benchmarks.growth import grow, ledger_size
from benchmarks.workload import a_host
from tests.builders import a_host as a_small_host

SMALL = dict(batch_size=40, page_size=50, max_cached_groups=200)


def retained_by_rebuild(events: int) -> int:
    """The most objects a rebuild of a grown ledger of about ``events`` events held at once
    (counted after each of its commits, beside what the process held before it; garbage
    in a reference cycle counts too, since the collector is paused while it runs)."""
    with open_ledger("memory://") as ledger:
        grow(ledger, a_host(ledger), events)
        with ReadModels.of(ledger) as models:
            gc.collect()
            before, peak = len(gc.get_objects()), 0

            def count(_position: int, _head: int) -> None:
                nonlocal peak
                peak = max(peak, len(gc.get_objects()) - before)

            models.rebuild(progress=count, **SMALL)
    return peak


def test_what_a_rebuild_holds_does_not_grow_with_the_history(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "PAUSE_GC_FROM", 1)  # as in a large catch-up
    small, large = retained_by_rebuild(2_000), retained_by_rebuild(8_000)
    assert large <= 1.2 * small, (small, large)


def test_batches_of_a_bulk_append_end_at_command_ends_and_equal_one_batch() -> None:
    with open_ledger("memory://") as ledger:
        host = a_host(ledger)
        start = ledger_size(ledger)  # then commands of two events each
        grow(ledger, host, 1_000)
        a_small_host(ledger)  # a last command of the service's own, with its command id
        committed: list[int] = []
        in_batches = ReadModels(ledger.store, open_engine(ledger.store.env, None))
        in_batches.rebuild(progress=lambda position, _head: committed.append(position),
                           **SMALL)
        at_once = ReadModels(ledger.store, open_engine(ledger.store.env, None))
        at_once.rebuild(batch_size=10**9)

        assert len(committed) > 10
        assert all((position - start) % 2 == 0 for position in committed[:-1])
        assert committed[-1] == ledger_size(ledger)
        assert table_rows(in_batches) == table_rows(at_once)


def table_rows(models: ReadModels) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every read model table, sorted."""
    with models.engine.connect() as conn:
        return {group.name: sorted((tuple(row) for row in conn.execute(group.table.select())),
                                   key=repr)
                for p in models.projections for group in p.groups}


def test_a_rebuild_past_its_cache_reads_back_no_stream_created_in_the_same_page(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Past its cache's size a rebuild reads back the names and groups of the streams a
    page names; a stream created in that page has nothing stored, so it is not asked for
    (a grown ledger's consumers are created and emptied a command apart: only those whose
    two commands fall in two pages are read back)."""
    from allocation_ledger.projections.row_groups import RowGroups

    asked: list[object] = []
    prefetch = RowGroups.prefetch

    def spied(self: RowGroups, conn: object, stream_ids: object) -> None:
        ids = list(stream_ids)  # type: ignore[call-overload]
        asked.extend(ids)
        prefetch(self, conn, ids)  # type: ignore[arg-type]

    with open_ledger("memory://") as ledger:
        host = a_host(ledger)
        grow(ledger, host, 3000)
        consumers = ledger_size(ledger) // 3
        monkeypatch.setattr(RowGroups, "prefetch", spied)
        with ReadModels.of(ledger) as models:
            report = models.rebuild(**SMALL)
    assert report.events == ledger_size(ledger)
    pages = report.events // SMALL["page_size"] + 1
    assert len(set(asked)) <= pages + 1 < consumers // 4  # before: 638 of the 1,000


def test_a_trim_lets_go_of_the_groups_put_longest_ago_and_keeps_a_busy_hosts() -> None:
    """The cache is trimmed by when a group was last put, not first: a host's groups,
    changed by every claim on it, stay with its stream's name; the groups of consumers
    put once and never again go, with their names (before, the host's went first, and
    the next page read them back)."""
    from uuid import uuid4

    from allocation_ledger.projections.allocations import CONSUMERS
    from allocation_ledger.projections.row_groups import RowGroups

    rows = RowGroups("allocations", (CONSUMERS,), complete=True)
    host = uuid4()
    rows.name_stream(host, "busy")
    rows.put(CONSUMERS, "busy", [{"consumer_uuid": "busy", "version": 1}])
    done = [uuid4() for _ in range(10)]
    for n, stream in enumerate(done):
        rows.name_stream(stream, f"c{n}")
        rows.put(CONSUMERS, f"c{n}", [{"consumer_uuid": f"c{n}", "version": 1}])
    rows.put(CONSUMERS, "busy", [{"consumer_uuid": "busy", "version": 2}])
    rows.take()

    rows.trim(4)

    assert rows.rows(CONSUMERS, "busy") == ({"consumer_uuid": "busy", "version": 2},)
    assert rows.name(host) == "busy"
    assert not rows.needs_read([host])
    assert rows.size <= 2
    assert rows.needs_read(done[:8])  # let go: read back from the tables when named
