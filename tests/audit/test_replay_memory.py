"""A replay (the audit's, ``state-at``'s) holds what the cloud holds now, not its past:
consumers that came and went and the record of every command are let go, and nothing
remembers which (issue 16)."""

from __future__ import annotations

import gc
import subprocess
import sys
import tracemalloc
from collections.abc import Sized
from itertools import islice
from pathlib import Path

import pytest

from allocation_ledger import open_ledger
from allocation_ledger.adapters.positions import position_of
from allocation_ledger.audit import audit, history
from allocation_ledger.audit.ledger_events import last_position
from allocation_ledger.audit.pointintime import replay, reviver
from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.ids import consumer_stream_id
from tests.builders import a_host, an_instance, new_id


@pytest.mark.parametrize("cycles", [5, 40])
def test_a_replay_of_instances_that_came_and_went_holds_only_the_host(cycles: int) -> None:
    with open_ledger("memory://") as ledger:
        host = a_host(ledger, vcpu=4, memory_mb=None)
        kept = an_instance(ledger, {host: {"VCPU": 1}}).consumer_uuid
        for _ in range(cycles):  # each a claim and a release, each with its command record
            gone = an_instance(ledger, {host: {"VCPU": 2}})
            ledger.release(gone.consumer_uuid, gone.generation)

        state = replay(ledger.store)
        assert audit(ledger.store, stale_after=None).ok

    assert set(state.consumers) == {kept}
    held = {name: len(value) for name, value in vars(state).items()
            if isinstance(value, Sized)}
    assert max(held.values()) <= 2, held  # the host and the one instance, whatever the past


def test_a_stream_is_read_back_only_where_the_store_holds_its_creation_before() -> None:
    with open_ledger("memory://") as ledger:
        host = a_host(ledger, vcpu=4, memory_mb=None)
        vm = new_id()
        ledger.claim(vm, {host: {"VCPU": 1}}, None, project_id="p", user_id="u")
        stream = consumer_stream_id(vm)
        created = position_of(ledger.store.recorder, stream, 1)
        assert created is not None
        revive = reviver(ledger.store)

        assert revive(stream, 2, created) is None  # an event before its creation
        assert isinstance(revive(stream, 2, created + 1), Consumer)
        assert revive(consumer_stream_id(new_id()), 2, created + 1) is None  # never created



def held_by_export(cycles: int, max_names: int = history.MAX_NAMES) -> int:
    """How many bytes the ledger export's own code held just before its last record, for a
    ledger of ``cycles`` instances that came and went (what it allocated and still holds:
    the records it gave away are gone)."""
    history.MAX_NAMES = max_names
    with open_ledger("memory://") as ledger:
        host = a_host(ledger, vcpu=4, memory_mb=None)
        for _ in range(cycles):
            gone = an_instance(ledger, {host: {"VCPU": 2}})
            ledger.release(gone.consumer_uuid, gone.generation)
        records = history.ledger_records(ledger.store)
        tracemalloc.start()
        try:
            for _ in islice(records, last_position(ledger.store) - 1):
                pass
            gc.collect()  # garbage in cycles is not held, whenever the collector last ran
            snapshot = tracemalloc.take_snapshot()
        finally:
            tracemalloc.stop()
    mine = snapshot.filter_traces([tracemalloc.Filter(True, history.__file__)])
    return sum(stat.size for stat in mine.statistics("filename"))


def held_by_export_alone(cycles: int, max_names: int) -> int:
    """``held_by_export`` in a process of its own: tracemalloc counts every thread's
    allocations, and a suite run in one process may have other threads at work."""
    code = ("from tests.audit.test_replay_memory import held_by_export; "
            f"print(held_by_export({cycles}, {max_names}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=Path(__file__).parents[2])
    return int(done.stdout.strip().splitlines()[-1])


def test_the_ledger_export_remembers_a_bounded_number_of_stream_names() -> None:
    # Remembering every name, 200 cycles hold about 80 kB more than 20 (checked below, so
    # the measure can fail); bounded, the difference is what the allocator's and the
    # dicts' sizes vary by from run to run (a few kB either way).
    assert held_by_export_alone(200, 4) <= held_by_export_alone(20, 4) + 15_000
    assert held_by_export_alone(200, 10**6) > held_by_export_alone(20, 10**6) + 50_000


def test_the_ledger_export_names_every_stream_however_few_it_remembers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with open_ledger("memory://") as ledger:
        host = a_host(ledger, vcpu=4, memory_mb=None)
        for _ in range(6):
            gone = an_instance(ledger, {host: {"VCPU": 2}})
            ledger.release(gone.consumer_uuid, gone.generation)
        remembering = list(history.ledger_records(ledger.store))
        monkeypatch.setattr(history, "MAX_NAMES", 1)
        assert list(history.ledger_records(ledger.store)) == remembering
    assert all("consumer_uuid" in r or "provider_uuid" in r
               for r in remembering if r["event"] != "Command.Recorded")
