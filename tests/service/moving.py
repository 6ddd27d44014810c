"""Scenario helpers for the move tests, after Nova's ``ProviderUsageBaseTestCase``.

Nova's functional tests check, after every step of a move, the usage of each compute node
and the allocations of the server and of its migration record. :class:`Scene` does the
same for the ledger, plus consumer generations, the migration's status and the docs/guarantees.md §5
invariants::

    scene = Scene(ledger, hosts)
    scene.expect(usage={h1: FLAVOR1}, consumers={vm: ({h1: FLAVOR1}, 1)})

``assert_refused`` and ``assert_loses_race`` prove that a refused or conflicting command
wrote nothing: the list of stored events is the same before and after.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

import pytest
from eventsourcing.persistence import DatetimeAsISO, JSONTranscoder
from freezegun import freeze_time
from freezegun.api import FakeDatetime, FrozenDateTimeFactory

from allocation_ledger import Ledger
from allocation_ledger.application.unit_of_work import UnitOfWork
from allocation_ledger.application.views import ConsumerView, MigrationView
from allocation_ledger.domain.errors import LedgerError
from tests.builders import PROJECT, USER, a_host, new_id, snapshot
from tests.invariants import assert_invariants

Amounts = Mapping[str, int]
Allocations = Mapping[str, Amounts]
#: What ``Scene.expect`` takes: usage, consumers (allocations, generation), migrations.
Expectation = tuple[Mapping[str, Amounts], Mapping[str, tuple[Allocations, int | None]],
                    Mapping[str, str]]
E = TypeVar("E", bound=LedgerError)
T = TypeVar("T")

#: Flavors as in Nova's tests: flavor2 is bigger than flavor1; flavor3 has less memory than
#: flavor2 but more disk (used for same-host resizes).
FLAVOR1: dict[str, int] = {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 1}
FLAVOR2: dict[str, int] = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}
FLAVOR3: dict[str, int] = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 40}
#: A NUMA-pinned flavor's split: CPU and memory on a NUMA child, disk on the root.
NUMA_CPU_MEM: dict[str, int] = {"VCPU": 2, "MEMORY_MB": 1024}
NUMA_DISK: dict[str, int] = {"DISK_GB": 10}


# -- worlds ----------------------------------------------------------------------------------


def flat_hosts(ledger: Ledger, count: int = 2, **sizes: int) -> list[str]:
    """``count`` compute hosts with all their inventory on the root (Nova's legacy layout)."""
    vcpu, memory_mb, disk_gb = (sizes.get(k, d) for k, d in
                                (("vcpu", 8), ("memory_mb", 8192), ("disk_gb", 100)))
    return [a_host(ledger, vcpu=vcpu, memory_mb=memory_mb, disk_gb=disk_gb)
            for _ in range(count)]


@dataclass(frozen=True)
class NumaHost:
    """A host whose CPU and memory sit on two NUMA children; disk stays on the root."""

    root: str
    numa0: str
    numa1: str

    @property
    def providers(self) -> list[str]:
        """Every provider of the tree."""
        return [self.root, self.numa0, self.numa1]

    def allocation(self) -> dict[str, dict[str, int]]:
        """A nested allocation on this host: CPU/memory on NUMA node 0, disk on the root."""
        return {self.numa0: dict(NUMA_CPU_MEM), self.root: dict(NUMA_DISK)}


def numa_host(ledger: Ledger) -> NumaHost:
    """Register a host with two NUMA children holding VCPU and MEMORY_MB."""
    root = a_host(ledger, vcpu=None, memory_mb=None, disk_gb=100)
    return NumaHost(root, *(a_host(ledger, vcpu=4, memory_mb=4096, parent=root)
                            for _ in range(2)))


def spawn(ledger: Ledger, consumer_uuid: str, allocations: Allocations) -> ConsumerView:
    """Boot a server: claim its allocations as a new consumer (generation 1)."""
    return ledger.claim(consumer_uuid, allocations, None, project_id=PROJECT, user_id=USER)


def claim(ledger: Ledger, consumer_uuid: str, allocations: Allocations,
          generation: int | None) -> ConsumerView:
    """Claim for an existing consumer (a move's destination claim passes ``None``)."""
    return ledger.claim(consumer_uuid, allocations, generation, project_id=PROJECT,
                        user_id=USER)


# -- assertions ------------------------------------------------------------------------------


def _nonzero(amounts: Mapping[str, int]) -> dict[str, int]:
    return {rc: n for rc, n in sorted(amounts.items()) if n}


def assert_usage(ledger: Ledger, expected: Mapping[str, Amounts],
                 idle: Iterable[str] = ()) -> None:
    """Each provider of ``expected`` uses exactly those amounts (a class left out: 0);
    each provider of ``idle`` uses nothing at all."""
    wanted = {rp: _nonzero(amounts) for rp, amounts in expected.items()}
    wanted.update({rp: {} for rp in idle if rp not in expected})
    actual = {rp: _nonzero(ledger.provider(rp).usages) for rp in wanted}
    assert actual == wanted, f"usage per provider: {actual} != expected {wanted}"


def assert_consumer(ledger: Ledger, consumer_uuid: str, allocations: Allocations,
                    generation: int | None) -> ConsumerView:
    """The consumer holds exactly ``allocations`` at ``generation`` (``None``: empty)."""
    view = ledger.consumer(consumer_uuid)
    want = {rp: dict(amounts) for rp, amounts in allocations.items()}
    assert (view.allocations, view.generation) == (want, generation), (
        f"consumer {consumer_uuid}: holds {view.allocations} at generation "
        f"{view.generation}, expected {want} at {generation}"
    )
    return view


def assert_migration(ledger: Ledger, migration_uuid: str, status: str) -> MigrationView:
    """The migration has ``status``; its view agrees with its consumer's; its instance
    reads as moving with it exactly while it is in flight."""
    view = ledger.migration(migration_uuid)
    assert view.status == status, f"migration {migration_uuid} is {view.status}, not {status}"
    as_consumer = ledger.consumer(migration_uuid)
    assert (view.allocations, view.generation) == (
        as_consumer.allocations, as_consumer.generation)
    assert as_consumer.consumer_type == "MIGRATION"
    moving_with = ledger.consumer(view.instance_uuid).migration_uuid
    if status == "in-progress":
        assert moving_with == migration_uuid
        assert view.finished_at is None
    else:
        assert moving_with != migration_uuid
        assert view.allocations == {} and view.generation is None
        assert view.finished_at is not None
    return view


@dataclass
class Scene:
    """A move scenario: its providers, checked all at once after every step."""

    ledger: Ledger
    providers: list[str] = field(default_factory=list)

    def expect(
        self,
        usage: Mapping[str, Amounts],
        consumers: Mapping[str, tuple[Allocations, int | None]],
        migrations: Mapping[str, str] | None = None,
    ) -> None:
        """Usage of every provider (those left out: none), each consumer's allocations and
        generation, each migration's status, and the ledger's invariants."""
        unknown = set(usage) - set(self.providers)
        assert not unknown, f"usage given for providers outside the scene: {unknown}"
        assert_usage(self.ledger, usage, idle=self.providers)
        for uuid, (allocations, generation) in consumers.items():
            assert_consumer(self.ledger, uuid, allocations, generation)
        for uuid, status in (migrations or {}).items():
            assert_migration(self.ledger, uuid, status)
        assert_invariants(self.ledger)


@dataclass(frozen=True)
class Move:
    """A move waiting for confirmation: the server (generation 3) holds ``host2``, its
    migration (generation 1: the destination claim named only the server) holds ``host1``."""

    scene: Scene
    host1: str
    host2: str
    vm: str
    mig: str


def moved_to_other_host(
    ledger: Ledger, kind: str = "resize", old: Amounts = FLAVOR1, new: Amounts = FLAVOR2
) -> Move:
    """Boot on host1, swap, claim host2 (Nova's VERIFY_RESIZE), checking every step."""
    host1, host2 = flat_hosts(ledger)
    scene = Scene(ledger, [host1, host2])
    vm, mig = new_id(), new_id()
    spawn(ledger, vm, {host1: old})
    scene.expect({host1: old}, {vm: ({host1: old}, 1)})

    started = ledger.swap(vm, mig, 1, kind=kind)
    assert (started.kind, started.instance_uuid) == (kind, vm)
    assert (started.source_root, started.destination_root) == (host1, None)
    assert (started.old_allocations, started.new_allocations) == ({host1: old}, {})
    scene.expect({host1: old}, {vm: ({}, None), mig: ({host1: old}, 1)}, {mig: "in-progress"})

    claim(ledger, vm, {host2: new}, None)
    context = ledger.migration(mig)
    assert (context.destination_root, context.new_allocations) == (host2, {host2: new})
    assert context.old_allocations == {host1: old}
    scene.expect({host1: old, host2: new}, {vm: ({host2: new}, 3), mig: ({host1: old}, 1)},
                 {mig: "in-progress"})
    return Move(scene, host1, host2, vm, mig)


def fields(err: LedgerError, *names: str) -> tuple[Any, ...]:
    """Some of an error's structured fields, in the order named."""
    return tuple(err.fields[name] for name in names)


def assert_writes_nothing(ledger: Ledger, command: Callable[[], T]) -> T:
    """Run ``command``; the ledger must store exactly what it stored before."""
    before = snapshot(ledger)
    try:
        return command()
    finally:
        after = snapshot(ledger)
        assert after == before, f"the command wrote {len(after) - len(before)} events"


def assert_refused(ledger: Ledger, error: type[E], command: Callable[[], object]) -> E:
    """``command`` raises ``error`` and the ledger stores exactly what it stored before."""
    with pytest.raises(error) as info:
        assert_writes_nothing(ledger, command)
    return info.value


@contextmanager
def another_writer_first(ledger: Ledger, competitor: Callable[[], object]) -> Iterator[list[Any]]:
    """The next command's append runs ``competitor`` (a real write through the ledger)
    first, between the command's reads and its save: a concurrent writer won the race.

    Yields a list that receives the stored events as they were right after ``competitor``.
    """
    original = UnitOfWork.commit
    after_competitor: list[Any] = []
    fired: list[bool] = []

    def commit(uow: UnitOfWork) -> int:
        if not fired:
            fired.append(True)  # before the competitor: its own commit must pass through
            competitor()
            after_competitor.append(snapshot(ledger))
        return original(uow)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(UnitOfWork, "commit", commit)
        yield after_competitor
    assert fired, "the command never reached its append: no race happened"


def assert_loses_race(ledger: Ledger, error: type[E], competitor: Callable[[], object],
                      command: Callable[[], object]) -> E:
    """``command`` loses to ``competitor`` with ``error``; of the two, only the
    competitor's write is stored."""
    with another_writer_first(ledger, competitor) as after_competitor, \
            pytest.raises(error) as info:
        command()
    assert snapshot(ledger) == after_competitor[0], "the losing command wrote events"
    return info.value


# -- time ------------------------------------------------------------------------------------


class _FrozenDatetimeAsISO(DatetimeAsISO):
    """Stores freezegun's datetimes exactly as real ones (same name, same ISO text)."""

    type = FakeDatetime


@contextmanager
def frozen_clock(ledger: Ledger, start: datetime) -> Iterator[FrozenDateTimeFactory]:
    """Freeze time at ``start`` for the ledger's event timestamps and reads.

    The event store's transcoder knows ``datetime`` by exact type, and under freezegun
    event timestamps are ``FakeDatetime``: teach it that they are datetimes.
    """
    transcoder = ledger.store.mapper.transcoder
    assert isinstance(transcoder, JSONTranscoder)
    transcoder.register(_FrozenDatetimeAsISO())
    with freeze_time(start) as clock:
        assert isinstance(clock, FrozenDateTimeFactory)
        yield clock
