"""Evacuations (Nova's ``test_evacuate`` family): the server holds its source and its
destination at once, with no migration consumer in between, until the failed source host
is cleaned up (``complete_evacuation``, or Nova's plain write of the destination share
alone); a plain write of the source alone is Nova's rollback and reverts it. Scheduled
(``destination=``) and forced (``destination_root=``); a forced evacuation of a nested
allocation is refused in ``test_moves_forced``.
"""

from __future__ import annotations

import pytest

from allocation_ledger import Ledger
from allocation_ledger.domain.errors import (
    ConsumerGenerationConflict,
    InsufficientCapacity,
    InvalidRequest,
)
from tests.builders import a_host, new_id
from tests.service.moving import (
    FLAVOR1,
    FLAVOR2,
    Scene,
    assert_refused,
    claim,
    flat_hosts,
    numa_host,
    spawn,
)


@pytest.mark.parametrize("forced", [False, True], ids=["scheduled", "forced"])
def test_evacuate_a_flat_allocation_then_clean_up_the_source(ledger: Ledger,
                                                              forced: bool) -> None:
    """Source plus destination until the source is cleaned up; then the dead host is empty
    and can be removed."""
    host1, host2 = flat_hosts(ledger)
    scene = Scene(ledger, [host1, host2])
    vm, mig = new_id(), new_id()
    spawn(ledger, vm, {host1: FLAVOR1})
    scene.expect({host1: FLAVOR1}, {vm: ({host1: FLAVOR1}, 1)})

    if forced:
        started = ledger.evacuate(vm, mig, 1, destination_root=host2)
    else:
        started = ledger.evacuate(vm, mig, 1, destination={host2: FLAVOR1})
    assert (started.kind, started.source_root, started.destination_root) == (
        "evacuation", host1, host2)
    assert (started.old_allocations, started.new_allocations) == (
        {host1: FLAVOR1}, {host2: FLAVOR1})
    both = {host1: FLAVOR1, host2: FLAVOR1}
    scene.expect(both, {vm: (both, 2), mig: ({}, None)}, {mig: "in-progress"})

    ledger.complete_evacuation(mig, 2)
    scene.expect({host2: FLAVOR1}, {vm: ({host2: FLAVOR1}, 3), mig: ({}, None)},
                 {mig: "completed"})

    ledger.delete_provider(host1, ledger.provider(host1).generation)
    scene.providers.remove(host1)
    scene.expect({host2: FLAVOR1}, {vm: ({host2: FLAVOR1}, 3)}, {mig: "completed"})


def test_scheduled_evacuation_of_a_nested_allocation_to_a_nested_host(ledger: Ledger) -> None:
    """The scheduler found a nested destination: no blind copy, so nested is fine."""
    source, target = numa_host(ledger), numa_host(ledger)
    scene = Scene(ledger, source.providers + target.providers)
    vm, mig = new_id(), new_id()
    old, new = source.allocation(), target.allocation()
    spawn(ledger, vm, old)
    scene.expect(old, {vm: (old, 1)})

    started = ledger.evacuate(vm, mig, 1, destination=new)
    assert (started.source_root, started.destination_root) == (source.root, target.root)
    scene.expect({**old, **new}, {vm: ({**old, **new}, 2), mig: ({}, None)},
                 {mig: "in-progress"})

    ledger.complete_evacuation(mig, 2)
    scene.expect(new, {vm: (new, 3), mig: ({}, None)}, {mig: "completed"})


def test_scheduled_evacuation_of_a_flat_allocation_to_a_nested_host(ledger: Ledger) -> None:
    """Flat source, nested destination chosen by the scheduler."""
    (host1,) = flat_hosts(ledger, 1)
    target = numa_host(ledger)
    scene = Scene(ledger, [host1, *target.providers])
    vm, mig = new_id(), new_id()
    old, new = {host1: {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10}}, target.allocation()
    spawn(ledger, vm, old)

    ledger.evacuate(vm, mig, 1, destination=new)
    scene.expect({**old, **new}, {vm: ({**old, **new}, 2), mig: ({}, None)},
                 {mig: "in-progress"})
    ledger.complete_evacuation(mig, 2)
    scene.expect(new, {vm: (new, 3), mig: ({}, None)}, {mig: "completed"})


def test_evacuation_that_did_not_happen_is_reverted(ledger: Ledger) -> None:
    """The rebuild on the destination failed: revert drops the destination share."""
    host1, host2 = flat_hosts(ledger)
    scene = Scene(ledger, [host1, host2])
    vm, mig = new_id(), new_id()
    spawn(ledger, vm, {host1: FLAVOR1})
    ledger.evacuate(vm, mig, 1, destination={host2: FLAVOR1})
    both = {host1: FLAVOR1, host2: FLAVOR1}
    scene.expect(both, {vm: (both, 2), mig: ({}, None)}, {mig: "in-progress"})

    ledger.revert(mig, None, 2)
    scene.expect({host1: FLAVOR1}, {vm: ({host1: FLAVOR1}, 3), mig: ({}, None)},
                 {mig: "reverted"})


@pytest.mark.parametrize("forced", [False, True], ids=["scheduled", "forced"])
def test_nova_rolls_back_a_failed_evacuation_with_a_plain_write(ledger: Ledger,
                                                                forced: bool) -> None:
    """The rebuild on the destination failed and Nova writes the server back to its source
    allocation (``PUT /allocations/{server}``, the source only): the evacuation closes as
    reverted, so the next evacuation of the server is decided on capacity, not refused as
    a move in progress."""
    host1, host2, host3 = flat_hosts(ledger, 3, vcpu=2)
    scene = Scene(ledger, [host1, host2, host3])
    vm, mig, neighbour = new_id(), new_id(), new_id()
    spawn(ledger, vm, {host1: FLAVOR1})
    if forced:
        ledger.evacuate(vm, mig, 1, destination_root=host2)
    else:
        ledger.evacuate(vm, mig, 1, destination={host2: FLAVOR1})
    both = {host1: FLAVOR1, host2: FLAVOR1}
    scene.expect(both, {vm: (both, 2), mig: ({}, None)}, {mig: "in-progress"})

    claim(ledger, vm, {host1: FLAVOR1}, 2)
    scene.expect({host1: FLAVOR1}, {vm: ({host1: FLAVOR1}, 3), mig: ({}, None)},
                 {mig: "reverted"})

    spawn(ledger, neighbour, {host2: FLAVOR2})  # host2 is full now
    again, elsewhere = new_id(), new_id()
    full = assert_refused(ledger, InsufficientCapacity,
                          lambda: ledger.evacuate(vm, again, 3, destination_root=host2))
    assert (full.fields["provider_uuid"], full.fields["resource_class"]) == (host2, "VCPU")
    ledger.evacuate(vm, elsewhere, 3, destination={host3: FLAVOR1})
    moved = {host1: FLAVOR1, host3: FLAVOR1}
    scene.expect({**moved, host2: FLAVOR2},
                 {vm: (moved, 4), mig: ({}, None), elsewhere: ({}, None),
                  neighbour: ({host2: FLAVOR2}, 1)},
                 {mig: "reverted", elsewhere: "in-progress"})


def test_a_plain_write_leaving_only_the_destination_completes_the_evacuation(
        ledger: Ledger) -> None:
    """Nova's source-host cleanup written as a plain write of the destination share: the
    same as ``complete_evacuation``."""
    host1, host2 = flat_hosts(ledger)
    scene = Scene(ledger, [host1, host2])
    vm, mig = new_id(), new_id()
    spawn(ledger, vm, {host1: FLAVOR1})
    ledger.evacuate(vm, mig, 1, destination={host2: FLAVOR1})

    claim(ledger, vm, {host2: FLAVOR1}, 2)
    scene.expect({host2: FLAVOR1}, {vm: ({host2: FLAVOR1}, 3), mig: ({}, None)},
                 {mig: "completed"})


def test_a_plain_write_keeping_both_shares_leaves_the_evacuation_in_flight(
        ledger: Ledger) -> None:
    """A write that still holds something on both hosts decides nothing."""
    host1, host2 = flat_hosts(ledger)
    scene = Scene(ledger, [host1, host2])
    vm, mig = new_id(), new_id()
    spawn(ledger, vm, {host1: FLAVOR1})
    ledger.evacuate(vm, mig, 1, destination={host2: FLAVOR1})

    bigger = {host1: FLAVOR1, host2: FLAVOR2}
    claim(ledger, vm, bigger, 2)
    scene.expect(bigger, {vm: (bigger, 3), mig: ({}, None)}, {mig: "in-progress"})
    ledger.complete_evacuation(mig, 3)
    scene.expect({host2: FLAVOR2}, {vm: ({host2: FLAVOR2}, 4), mig: ({}, None)},
                 {mig: "completed"})


def test_deleting_an_evacuating_server_frees_both_hosts(ledger: Ledger) -> None:
    """The server holds both shares itself; releasing it aborts the evacuation."""
    host1, host2 = flat_hosts(ledger)
    scene = Scene(ledger, [host1, host2])
    vm, mig = new_id(), new_id()
    spawn(ledger, vm, {host1: FLAVOR1})
    ledger.evacuate(vm, mig, 1, destination_root=host2)
    both = {host1: FLAVOR1, host2: FLAVOR1}
    scene.expect(both, {vm: (both, 2), mig: ({}, None)}, {mig: "in-progress"})

    ledger.release(vm, 2)
    scene.expect({}, {vm: ({}, None), mig: ({}, None)}, {mig: "aborted"})


def test_evacuation_refusals_write_nothing(ledger: Ledger) -> None:
    """Same host, both or neither destination forms, no room, a stale generation at the
    cleanup: each refused with nothing written."""
    host1, host2 = flat_hosts(ledger, vcpu=2)
    scene = Scene(ledger, [host1, host2])
    vm, big, mig = new_id(), new_id(), new_id()
    spawn(ledger, vm, {host1: FLAVOR1})
    spawn(ledger, big, {host2: FLAVOR2})
    start = ({host1: FLAVOR1, host2: FLAVOR2},
             {vm: ({host1: FLAVOR1}, 1), big: ({host2: FLAVOR2}, 1)})
    scene.expect(*start)

    err = assert_refused(ledger, InvalidRequest,
                         lambda: ledger.evacuate(vm, mig, 1, destination={host1: FLAVOR1}))
    assert err.fields["provider_uuid"] == host1 and "must leave host" in str(err)
    assert_refused(ledger, InvalidRequest, lambda: ledger.evacuate(vm, mig, 1))
    assert_refused(ledger, InvalidRequest, lambda: ledger.evacuate(
        vm, mig, 1, destination={host2: FLAVOR1}, destination_root=host2))
    full = assert_refused(ledger, InsufficientCapacity,
                          lambda: ledger.evacuate(vm, mig, 1, destination_root=host2))
    assert (full.fields["provider_uuid"], full.fields["resource_class"]) == (host2, "VCPU")
    scene.expect(*start)

    ledger.release(big, 1)
    scene.expect({host1: FLAVOR1}, {vm: ({host1: FLAVOR1}, 1), big: ({}, None)})
    ledger.evacuate(vm, mig, 1, destination_root=host2)
    both = {host1: FLAVOR1, host2: FLAVOR1}
    scene.expect(both, {vm: (both, 2), big: ({}, None), mig: ({}, None)},
                 {mig: "in-progress"})
    stale = assert_refused(ledger, ConsumerGenerationConflict,
                           lambda: ledger.complete_evacuation(mig, 1))
    assert stale.to_dict() == {
        "error": "ConsumerGenerationConflict", "message": str(stale),
        "consumer_uuid": vm, "expected": 1, "actual": 2}
    scene.expect(both, {vm: (both, 2), mig: ({}, None)}, {mig: "in-progress"})


#: Fixed ids so that the destination host sorts before the failed one.
DEAD = "ffffffff-0000-4000-8000-000000000001"
SPARE = "00000000-0000-4000-8000-000000000002"


def test_evacuation_destination_touching_the_failed_host_is_refused(ledger: Ledger) -> None:
    """Whatever the uuids, a destination that keeps a share on the failed host is refused
    (with the opposite uuid order the ledger already refuses it)."""
    inventory = {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 8192}, "DISK_GB": {"total": 100}}
    for host in (DEAD, SPARE):
        ledger.register_provider(host, host[:8], inventories=inventory)
    scene = Scene(ledger, [DEAD, SPARE])
    vm, mig = new_id(), new_id()
    spawn(ledger, vm, {DEAD: FLAVOR1})

    err = assert_refused(ledger, InvalidRequest, lambda: ledger.evacuate(
        vm, mig, 1, destination={SPARE: FLAVOR1, DEAD: {"VCPU": 1}}))
    assert err.fields["provider_uuid"] == DEAD
    scene.expect({DEAD: FLAVOR1}, {vm: ({DEAD: FLAVOR1}, 1)})


def test_completing_an_evacuation_cleans_only_the_evacuated_host(ledger: Ledger) -> None:
    """An instance holding CPU on host A and disk on another root (shared storage)
    evacuates A to C: the clean-up removes its share on A alone; its disk on the storage
    provider stays (DESIGN §4)."""
    host_a, host_c = flat_hosts(ledger)
    storage = a_host(ledger, vcpu=None, memory_mb=None, disk_gb=100)
    vm, mig = new_id(), new_id()
    spawn(ledger, vm, {host_a: {"VCPU": 2}, storage: {"DISK_GB": 10}})
    ledger.evacuate(vm, mig, 1, destination={host_c: {"VCPU": 2}})
    done = ledger.complete_evacuation(mig, 2)
    assert done.status == "completed"
    assert ledger.consumer(vm).allocations == {host_c: {"VCPU": 2},
                                               storage: {"DISK_GB": 10}}
    assert ledger.provider(storage).usages["DISK_GB"] == 10
    assert ledger.provider(host_a).usages["VCPU"] == 0
