"""Exactly once: an event at or below a projection's stored position is never applied again,
whoever delivers it (a second runner, a stale cache, a second catch-up); and a read can
wait for the projections to reach a ledger position (read your own writes)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.projections import queries
from allocation_ledger.projections.readmodels import ReadModels, ledger_position
from benchmarks.random_ledger import populate
from tests.builders import a_host, an_instance
from tests.projections.expected import folded, stored
from tests.projections.test_equivalence import another_store, following
from tests.stores import store_url

STORES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(scope="module", params=STORES)
def ledger(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ledger]:
    """A ledger with a few hundred random commands, on SQLite and on PostgreSQL (shared by
    the module's tests: each reads it into read models of its own)."""
    with store_url(request.param, tmp_path_factory.mktemp("ledger")) as url, \
            open_ledger(url) as opened:
        populate(opened, seed=99, steps=200)
        yield opened


@pytest.fixture
def read(ledger: Ledger, tmp_path: Path) -> Iterator[ReadModels]:
    """Fresh, empty read models of ``ledger`` (in a store of their own)."""
    with another_store(store_kind(ledger), tmp_path) as url, \
            ReadModels.of(ledger, url=url) as opened:
        yield opened


def store_kind(ledger: Ledger) -> str:
    """"postgres" or "sqlite"."""
    module = ledger.store.env.get("PERSISTENCE_MODULE") or ""
    return "postgres" if module.endswith("postgres") else "sqlite"


def test_a_runner_behind_another_applies_nothing_twice(ledger: Ledger, read: ReadModels) -> None:
    ahead, behind = read.runner(batch_size=20), read.runner(batch_size=20)
    head = ahead.catch_up()
    written = ahead.rows_written
    assert behind.positions == dict.fromkeys(behind.positions, 0)  # it read 0, then slept
    assert behind.catch_up() == head
    assert (behind.rows_written, behind.conflicts) == (0, 1)  # it found the position moved
    assert read.positions() == dict.fromkeys(read.positions(), head)
    assert stored(read.engine) == folded(ledger)
    assert written > 0


def test_a_second_catch_up_applies_nothing(ledger: Ledger, read: ReadModels) -> None:
    first = read.resume(batch_size=50)
    before = stored(read.engine, everything=True)
    again = read.resume(batch_size=50)
    assert first.events == ledger_position(ledger)
    assert (again.events, again.rows_written) == (0, 0)
    assert stored(read.engine, everything=True) == before


def test_two_runners_racing_from_zero_apply_each_event_once(ledger: Ledger,
                                                           read: ReadModels) -> None:
    runners = [read.runner(batch_size=5, page_size=40) for _ in range(2)]
    failures: list[BaseException] = []

    def run(index: int) -> None:
        try:
            runners[index].catch_up()
        except BaseException as err:
            failures.append(err)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not failures, failures
    assert read.positions() == dict.fromkeys(read.positions(), ledger_position(ledger))
    assert stored(read.engine) == folded(ledger)


def test_rebuilding_one_projection_leaves_the_others_alone(ledger: Ledger,
                                                          read: ReadModels) -> None:
    everything = read
    everything.resume()
    before, was = stored(everything.engine), ledger_position(ledger)
    host = a_host(ledger, vcpu=8)
    an_instance(ledger, {host: {"VCPU": 2}})
    devices = ReadModels(ledger.store, read.engine, names=["devices"])
    report = devices.rebuild()
    positions = everything.positions()
    assert report.positions == {"devices": ledger_position(ledger)}
    assert positions["devices"] == ledger_position(ledger)
    assert positions == {"host_usage": was, "allocations": was, "devices": ledger_position(ledger),
                         "migrations": was}
    assert stored(everything.engine)["proj_host_usage"] == before["proj_host_usage"]
    everything.resume()
    assert stored(everything.engine) == folded(ledger)


def test_a_read_waits_for_the_projections_to_reach_the_write(ledger: Ledger,
                                                            read: ReadModels) -> None:
    with following(read, batch_size=10):
        host = a_host(ledger, vcpu=8)
        vm = an_instance(ledger, {host: {"VCPU": 3}})
        read.wait(ledger_position(ledger), timeout=30)
        usage = queries.host_usage(read.engine, host)
        generation, held = queries.allocations_of(read.engine, vm.consumer_uuid)
    assert [(u.resource_class, u.used, u.free) for u in usage] == [
        ("MEMORY_MB", 0, 32768), ("VCPU", 3, 5)]
    assert (generation, held) == (vm.generation, {host: {"VCPU": 3}})


def test_waiting_for_a_position_no_runner_reaches_times_out(ledger: Ledger,
                                                           read: ReadModels) -> None:
    read.resume()
    with pytest.raises(TimeoutError):
        read.wait(ledger_position(ledger) + 1, timeout=0.3)


@pytest.mark.postgres
def test_a_postgres_follower_hears_new_events_without_polling(pg_url: str) -> None:
    """With polling every minute, only the subscription (LISTEN/NOTIFY) can be this quick."""
    with open_ledger(pg_url + "&pool_size=2") as ledger, ReadModels.of(ledger) as read, \
            following(read, poll_interval=60.0) as _:
        for _ in range(3):
            an_instance(ledger, {a_host(ledger): {"VCPU": 1}})
            read.wait(ledger_position(ledger), timeout=5)
        assert stored(read.engine) == folded(ledger)
