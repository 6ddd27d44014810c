"""Every projection, rebuilt from zero, equals the same projection maintained incrementally
(a follower running beside a long randomized writer) and the state the domain itself folds
from the ledger; and no batch ever ended in the middle of a command."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.projections.readmodels import ReadModels, ledger_position
from benchmarks.random_ledger import populate
from tests.builders import a_host, an_instance
from tests.projections.expected import folded, stored
from tests.stores import postgres_schema_url, store_url

STORES = ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
STEPS = {"memory": 1200, "sqlite": 1200, "postgres": 700}
EVERY_EVENT = {
    "Provider.Registered", "Provider.InventoriesSet", "Provider.ChildAttached",
    "Provider.ChildDetached", "Provider.AllocationsChanged", "Provider.DevicesSet",
    "Provider.Deleted", "Consumer.Created", "Consumer.AllocationsClaimed",
    "Consumer.AllocationsReleased", "Consumer.AllocationsHandedOver",
    "Consumer.AllocationsReturned", "Consumer.EvacuationStarted",
    "Consumer.EvacuationSourceRemoved", "Migration.Started", "Migration.DestinationClaimed",
    "Migration.DestinationRemoved",
    "Migration.Confirmed", "Migration.Reverted", "Migration.Completed", "Migration.Aborted",
    "Command.Recorded", "Provider.Reregistered", "ProviderName.Taken", "ProviderName.Retaken",
    "ProviderName.Released",
}


@contextmanager
def another_store(kind: str, tmp_path: Path) -> Iterator[str]:
    """A second, empty store for a second copy of the read models."""
    if kind == "postgres":
        with postgres_schema_url() as url:
            yield url + "&pool_size=2"
    else:  # a file even for memory://: a follower thread and a reader share it
        yield f"sqlite:///{tmp_path / 'followed.db'}"


@contextmanager
def following(read: ReadModels, **options: object) -> Iterator[None]:
    """Run ``read.follow`` in a thread for the duration; its errors fail the test."""
    stop, failures = threading.Event(), []

    def run() -> None:
        try:
            read.follow(stop, **{"poll_interval": 0.05, **options})  # type: ignore[arg-type]
        except BaseException as err:  # reported below
            failures.append(err)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(60)
    assert not failures, failures


def topics(ledger: Ledger) -> set[str]:
    """The event types (``Class.Event``) the ledger holds."""
    return {n.topic.split(":")[1] for n in ledger.store.recorder.select_notifications(1, 10**7)}


@pytest.mark.parametrize("kind", STORES)
def test_rebuilt_equals_followed_equals_folded(kind: str, tmp_path: Path) -> None:
    with store_url(kind, tmp_path) as url, another_store(kind, tmp_path) as elsewhere, \
            open_ledger(url) as ledger:
        # The follower shares the ledger's own database (and its writer's locks), except on
        # memory:// whose private in-memory read store one thread only may use.
        followed = ReadModels.of(ledger, url=elsewhere if kind == "memory" else None)
        commits: list[int] = []

        def record(position: int, _head: int) -> None:
            commits.append(position)

        with following(followed, batch_size=25, progress=record):
            world = populate(ledger, seed=42, steps=STEPS[kind])
            followed.wait(ledger_position(ledger), timeout=60)
        rebuilt = ReadModels.of(ledger, url=None if kind == "memory" else elsewhere)
        report = rebuilt.rebuild(batch_size=40)

        assert topics(ledger) == EVERY_EVENT  # the run exercised every command type
        expected = folded(ledger)
        assert stored(rebuilt.engine) == expected
        assert stored(followed.engine) == expected
        assert stored(followed.engine, everything=True) == stored(rebuilt.engine, everything=True)
        assert report.positions == dict.fromkeys(report.positions, ledger_position(ledger))
        assert len(commits) > 10
        assert set(commits) <= world.command_ends, "a batch ended inside a command"
        followed.close()
        rebuilt.close()


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_resuming_with_a_cold_cache_equals_folded(kind: str, tmp_path: Path) -> None:
    """Tiny batches and a cache dropped after every commit: every batch reads its groups
    back from the tables, as a resumed projection does."""
    with store_url(kind, tmp_path) as url, open_ledger(url) as ledger:
        world = populate(ledger, seed=7, steps=300)
        read = ReadModels.of(ledger)
        commits: list[int] = []
        report = read.rebuild(batch_size=3, max_cached_groups=2, page_size=50,
                              progress=lambda position, _head: commits.append(position))
        assert stored(read.engine) == folded(ledger)
        assert report.events == ledger_position(ledger)
        assert len(commits) > 100
        assert set(commits) <= world.command_ends
        read.close()


def test_batches_end_between_commands_sent_without_a_request() -> None:
    """Every command stamps its own ``command_id``: batches can end between any two."""
    with open_ledger("memory://") as ledger:
        host = a_host(ledger, vcpu=64)
        ends = {ledger_position(ledger)}
        for _ in range(20):
            an_instance(ledger, {host: {"VCPU": 1}})
            ends.add(ledger_position(ledger))
        commits: list[int] = []
        ReadModels.of(ledger).rebuild(
            batch_size=5, progress=lambda position, _head: commits.append(position))
    # 4 events for the host (its command's record first, its name last), then 3 per claim: a
    # batch holds 5 events at least and closes at the next command end, so every 6 events
    # from the 7th (the last one at the head, 64).
    assert commits == [7, 13, 19, 25, 31, 37, 43, 49, 55, 61, 64]
    assert set(commits) <= ends
