"""Forced live migrations: a blind copy of the server's allocation to a named host.

Jay Pipes' rule (``domain/force-move-nested-allocations.txt``): a source allocation on more
than one provider fails hard, whatever the destination; a flat source copied to a host that
lacks a class (or the room) fails at the destination. Either way nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from allocation_ledger import Ledger
from allocation_ledger.domain.errors import (
    InsufficientCapacity,
    InvalidRequest,
    NestedAllocationMove,
    ResourceClassNotOnProvider,
)
from tests.builders import a_host, new_id
from tests.service.moving import (
    FLAVOR1,
    FLAVOR2,
    NUMA_CPU_MEM,
    Move,
    Scene,
    assert_refused,
    claim,
    fields,
    flat_hosts,
    numa_host,
    spawn,
)

ForcedMove = Callable[[Ledger, str, str, str, int], object]


def _force_live_migrate(ledger: Ledger, vm: str, mig: str, host: str, gen: int) -> object:
    return ledger.force_live_migrate(vm, mig, host, gen)


def _force_evacuate(ledger: Ledger, vm: str, mig: str, host: str, gen: int) -> object:
    return ledger.evacuate(vm, mig, gen, destination_root=host)


FORCED = [pytest.param(_force_live_migrate, id="live-migrate"),
          pytest.param(_force_evacuate, id="evacuate")]


def _forced_live_migration(ledger: Ledger) -> Move:
    host1, host2 = flat_hosts(ledger)
    scene = Scene(ledger, [host1, host2])
    vm, mig = new_id(), new_id()
    spawn(ledger, vm, {host1: FLAVOR1})
    scene.expect({host1: FLAVOR1}, {vm: ({host1: FLAVOR1}, 1)})

    started = ledger.force_live_migrate(vm, mig, host2, 1)
    assert (started.kind, started.source_root, started.destination_root) == (
        "live-migration", host1, host2)
    assert started.new_allocations == {host2: FLAVOR1}
    # One write: the server holds the copy at once, the migration holds the source.
    scene.expect({host1: FLAVOR1, host2: FLAVOR1},
                 {vm: ({host2: FLAVOR1}, 2), mig: ({host1: FLAVOR1}, 1)}, {mig: "in-progress"})
    return Move(scene, host1, host2, vm, mig)


def test_forced_live_migration_of_a_flat_allocation_then_confirm(ledger: Ledger) -> None:
    """The legacy case: the copy works and confirming frees the source."""
    m = _forced_live_migration(ledger)
    ledger.confirm(m.mig, 1)
    m.scene.expect({m.host2: FLAVOR1}, {m.vm: ({m.host2: FLAVOR1}, 2), m.mig: ({}, None)},
                   {m.mig: "confirmed"})


def test_forced_live_migration_of_a_flat_allocation_then_rollback(ledger: Ledger) -> None:
    """A failed forced live migration rolls back like a scheduled one."""
    m = _forced_live_migration(ledger)
    ledger.revert(m.mig, 1, 2)
    m.scene.expect({m.host1: FLAVOR1}, {m.vm: ({m.host1: FLAVOR1}, 3), m.mig: ({}, None)},
                   {m.mig: "reverted"})


@pytest.mark.parametrize("destination", ["flat", "nested"])
@pytest.mark.parametrize("force", FORCED)
def test_forced_move_of_a_nested_allocation_is_refused(
    ledger: Ledger, force: ForcedMove, destination: str
) -> None:
    """CPU/memory on a NUMA child plus disk on the root: two providers, no blind copy,
    whether the destination is flat or nested. The scheduled path still works."""
    source = numa_host(ledger)
    if destination == "flat":
        dest_root = flat_hosts(ledger, 1)[0]
        scene = Scene(ledger, [*source.providers, dest_root])
        scheduled = {dest_root: {**NUMA_CPU_MEM, "DISK_GB": 10}}
    else:
        target = numa_host(ledger)
        dest_root = target.root
        scene = Scene(ledger, source.providers + target.providers)
        scheduled = target.allocation()
    vm, mig = new_id(), new_id()
    old = source.allocation()
    spawn(ledger, vm, old)
    scene.expect(old, {vm: (old, 1)})

    err = assert_refused(ledger, NestedAllocationMove,
                         lambda: force(ledger, vm, mig, dest_root, 1))
    assert err.fields["instance_uuid"] == vm
    assert err.fields["provider_uuids"] == sorted([source.root, source.numa0])
    assert "schedule the move instead" in str(err)
    assert ledger.consumer(mig).generation is None and ledger.migrations_in_flight() == []
    scene.expect(old, {vm: (old, 1)})

    ledger.swap(vm, mig, 1, kind="live-migration")
    scene.expect(old, {vm: ({}, None), mig: (old, 1)}, {mig: "in-progress"})
    claim(ledger, vm, scheduled, None)
    scene.expect({**old, **scheduled}, {vm: (scheduled, 3), mig: (old, 1)},
                 {mig: "in-progress"})
    ledger.confirm(mig, 1)
    scene.expect(scheduled, {vm: (scheduled, 3), mig: ({}, None)}, {mig: "confirmed"})


@pytest.mark.parametrize("force", FORCED)
def test_forced_move_to_a_host_without_disk_is_refused(ledger: Ledger,
                                                       force: ForcedMove) -> None:
    """A flat source with DISK_GB copied to a host with no DISK_GB inventory."""
    (host1,) = flat_hosts(ledger, 1)
    diskless = a_host(ledger, vcpu=8, memory_mb=8192)
    scene = Scene(ledger, [host1, diskless])
    vm, mig = new_id(), new_id()
    spawn(ledger, vm, {host1: FLAVOR1})
    scene.expect({host1: FLAVOR1}, {vm: ({host1: FLAVOR1}, 1)})

    err = assert_refused(ledger, ResourceClassNotOnProvider,
                         lambda: force(ledger, vm, mig, diskless, 1))
    assert (err.fields["provider_uuid"], err.fields["resource_class"]) == (diskless, "DISK_GB")
    scene.expect({host1: FLAVOR1}, {vm: ({host1: FLAVOR1}, 1)})


@pytest.mark.parametrize("force", FORCED)
def test_forced_move_of_a_flat_allocation_to_a_numa_host_is_refused(
    ledger: Ledger, force: ForcedMove
) -> None:
    """The reverse case: the copy lands on the nested host's root, which has no VCPU."""
    (host1,) = flat_hosts(ledger, 1)
    target = numa_host(ledger)
    scene = Scene(ledger, [host1, *target.providers])
    vm, mig = new_id(), new_id()
    spawn(ledger, vm, {host1: FLAVOR1})

    err = assert_refused(ledger, ResourceClassNotOnProvider,
                         lambda: force(ledger, vm, mig, target.root, 1))
    assert err.fields["provider_uuid"] == target.root
    assert err.fields["resource_class"] in {"VCPU", "MEMORY_MB"}
    scene.expect({host1: FLAVOR1}, {vm: ({host1: FLAVOR1}, 1)})


@pytest.mark.parametrize("force", FORCED)
def test_forced_move_to_a_full_host_is_refused(ledger: Ledger, force: ForcedMove) -> None:
    """No scheduler, but the destination's capacity still holds."""
    host1, host2 = flat_hosts(ledger, vcpu=2)
    scene = Scene(ledger, [host1, host2])
    vm, other, mig = new_id(), new_id(), new_id()
    spawn(ledger, vm, {host1: FLAVOR2})
    spawn(ledger, other, {host2: FLAVOR1})
    start = ({host1: FLAVOR2, host2: FLAVOR1},
             {vm: ({host1: FLAVOR2}, 1), other: ({host2: FLAVOR1}, 1)})
    scene.expect(*start)

    err = assert_refused(ledger, InsufficientCapacity,
                         lambda: force(ledger, vm, mig, host2, 1))
    assert fields(err, "provider_uuid", "resource_class", "free") == (host2, "VCPU", 1)
    scene.expect(*start)


@pytest.mark.parametrize("force", FORCED)
def test_forced_move_to_a_nested_child_is_refused(ledger: Ledger, force: ForcedMove) -> None:
    """A forced move names a host (a root), not one of its NUMA nodes."""
    (host1,) = flat_hosts(ledger, 1)
    target = numa_host(ledger)
    scene = Scene(ledger, [host1, *target.providers])
    vm, mig = new_id(), new_id()
    spawn(ledger, vm, {host1: {"VCPU": 1}})

    err = assert_refused(ledger, InvalidRequest,
                         lambda: force(ledger, vm, mig, target.numa0, 1))
    assert err.fields["provider_uuid"] == target.numa0
    scene.expect({host1: {"VCPU": 1}}, {vm: ({host1: {"VCPU": 1}}, 1)})


def test_forced_live_migration_of_an_allocation_on_one_numa_child(ledger: Ledger) -> None:
    """The rule counts providers: an allocation on a single (child) provider is copied to
    the destination root, as gibi's case 3 allows when the destination has the classes."""
    source = numa_host(ledger)
    (host2,) = flat_hosts(ledger, 1)
    scene = Scene(ledger, [*source.providers, host2])
    vm, mig = new_id(), new_id()
    spawn(ledger, vm, {source.numa1: NUMA_CPU_MEM})
    scene.expect({source.numa1: NUMA_CPU_MEM}, {vm: ({source.numa1: NUMA_CPU_MEM}, 1)})

    started = ledger.force_live_migrate(vm, mig, host2, 1)
    assert (started.source_root, started.destination_root) == (source.root, host2)
    scene.expect({source.numa1: NUMA_CPU_MEM, host2: NUMA_CPU_MEM},
                 {vm: ({host2: NUMA_CPU_MEM}, 2), mig: ({source.numa1: NUMA_CPU_MEM}, 1)},
                 {mig: "in-progress"})
    ledger.confirm(mig, 1)
    scene.expect({host2: NUMA_CPU_MEM}, {vm: ({host2: NUMA_CPU_MEM}, 2), mig: ({}, None)},
                 {mig: "confirmed"})


def test_forced_live_migration_to_its_own_host_is_refused(ledger: Ledger) -> None:
    """Nova's conductor refuses a forced live migration to the source host
    (``_check_destination_is_not_source``); forced evacuation to it is already refused."""
    host1, host2 = flat_hosts(ledger)
    scene = Scene(ledger, [host1, host2])
    vm, mig = new_id(), new_id()
    spawn(ledger, vm, {host1: FLAVOR1})

    err = assert_refused(ledger, InvalidRequest,
                         lambda: ledger.force_live_migrate(vm, mig, host1, 1))
    assert err.fields["provider_uuid"] == host1
    scene.expect({host1: FLAVOR1}, {vm: ({host1: FLAVOR1}, 1)})
