"""Devices carried through moves: resize (cross-host and same-host), live migration,
forced live migration, evacuation, and an instance deleted mid-move.

A swap hands the instance's devices to the migration consumer; the instance's destination
claim takes new ones; confirm frees the old set, revert frees the new set and gives the old
back. An evacuating instance holds its source devices until the evacuation completes.
After every step the DESIGN §5 invariants are checked and so is exactly which device ids
each consumer (instance, migration, neighbour) holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from allocation_ledger import Ledger
from allocation_ledger.application.views import ConsumerView
from allocation_ledger.domain.errors import (
    DeviceInUse,
    DevicesUnavailable,
    InsufficientCapacity,
    LedgerError,
)
from tests.builders import PROJECT, USER, a_host, an_instance, new_id, snapshot
from tests.invariants import assert_invariants
from tests.service.devicing import NAMESPACES, PCI, PMEM, assert_holders, device_host, spawn

SOURCE_ADDRESSES = ("0000:81:00.1", "0000:81:00.2", "0000:81:00.3")
DESTINATION_ADDRESSES = ("0000:3b:00.0", "0000:3b:00.1", "0000:3b:00.2")
SOURCE_MDEVS = ("0b5c1f7e-0000-4000-8000-00000000a001", "0b5c1f7e-0000-4000-8000-00000000a002")
DESTINATION_MDEVS = (
    "d41e9a20-0000-4000-8000-00000000b001",
    "d41e9a20-0000-4000-8000-00000000b002",
    "d41e9a20-0000-4000-8000-00000000b003",
)


def generation(ledger: Ledger, consumer: str) -> int:
    """The consumer's current generation (it must hold something)."""
    found = ledger.consumer(consumer).generation
    assert found is not None, f"{consumer} holds nothing"
    return found


def start_move(ledger: Ledger, instance: str, kind: str = "resize") -> str:
    """Swap the instance's allocation and devices to a new migration; its uuid."""
    migration = new_id()
    view = ledger.swap(instance, migration, generation(ledger, instance),
                       kind=kind)
    assert view.devices == view.old_devices
    assert ledger.consumer(instance).devices == {}
    assert_invariants(ledger)
    return migration


def claim_destination(ledger: Ledger, instance: str, allocations: Mapping[str, Mapping[str, int]],
                      devices: Mapping[str, Mapping[str, Sequence[str]]] | None = None
                      ) -> ConsumerView:
    """The emptied instance claims its destination."""
    view = ledger.claim(instance, {rp: dict(r) for rp, r in allocations.items()}, None,
                        project_id=PROJECT, user_id=USER, devices=devices)
    assert_invariants(ledger)
    return view


# -- resize ---------------------------------------------------------------------------------


def test_cross_host_resize_reverts_then_confirms_with_pci_devices(ledger: Ledger) -> None:
    source = device_host(ledger, PCI, SOURCE_ADDRESSES)
    target = device_host(ledger, PCI, DESTINATION_ADDRESSES)
    neighbour = spawn(ledger, {target: {PCI: 1}}).consumer_uuid
    # not the lowest addresses, so only carrying the ids (not re-picking) gives these back
    held = SOURCE_ADDRESSES[1:]
    vm = spawn(ledger, {source: {"VCPU": 2, PCI: 2}},
               devices={source: {PCI: list(held)}}).consumer_uuid
    flavor2 = {target: {"VCPU": 4, PCI: 2}}

    migration = start_move(ledger, vm)
    assert_holders(ledger, source, PCI, {migration: held, vm: []})
    claimed = claim_destination(ledger, vm, flavor2)
    assert_holders(ledger, source, PCI, {migration: held})
    assert_holders(ledger, target, PCI, {neighbour: DESTINATION_ADDRESSES[:1],
                                         vm: DESTINATION_ADDRESSES[1:]})
    context = ledger.migration(migration)
    assert context.old_devices == {source: {PCI: list(held)}}
    assert context.new_devices == {target: {PCI: list(DESTINATION_ADDRESSES[1:])}}

    ledger.revert(migration, context.generation, claimed.generation)
    assert ledger.migration(migration).status == "reverted"
    assert_holders(ledger, source, PCI, {vm: held, migration: []})
    assert_holders(ledger, target, PCI, {neighbour: DESTINATION_ADDRESSES[:1], vm: []})

    again = start_move(ledger, vm)
    claim_destination(ledger, vm, flavor2)
    ledger.confirm(again, generation(ledger, again))
    assert ledger.migration(again).status == "confirmed"
    assert_holders(ledger, source, PCI, {vm: [], again: []})
    assert_holders(ledger, target, PCI, {neighbour: DESTINATION_ADDRESSES[:1],
                                         vm: DESTINATION_ADDRESSES[1:]})


def _resize_on_the_same_host(ledger: Ledger, host: str, vm: str) -> str:
    """Resize ``vm`` on ``host``: the migration keeps ns-0, ns-1 and the instance takes
    ns-2, ns-3, so the host is full and both sets are held at once."""
    migration = start_move(ledger, vm)
    claim_destination(ledger, vm, {host: {"VCPU": 4, PMEM: 2}})
    assert_holders(ledger, host, PMEM, {migration: NAMESPACES[:2], vm: NAMESPACES[2:]})
    context = ledger.migration(migration)
    old = set(context.old_devices[host][PMEM])
    new = set(context.new_devices[host][PMEM])
    assert old.isdisjoint(new) and old | new == set(NAMESPACES)
    assert ledger.provider(host).classes[PMEM].free == 0
    before = snapshot(ledger)
    with pytest.raises(LedgerError):
        an_instance(ledger, {host: {PMEM: 1}})
    assert snapshot(ledger) == before
    return migration


def test_same_host_resize_fills_the_host_then_reverts_then_confirms(ledger: Ledger) -> None:
    host = device_host(ledger, PMEM, NAMESPACES)
    vm = spawn(ledger, {host: {"VCPU": 2, PMEM: 2}}).consumer_uuid

    first = _resize_on_the_same_host(ledger, host, vm)
    ledger.revert(first, ledger.migration(first).generation, ledger.consumer(vm).generation)
    assert_holders(ledger, host, PMEM, {vm: NAMESPACES[:2], first: []})

    second = _resize_on_the_same_host(ledger, host, vm)
    ledger.confirm(second, generation(ledger, second))
    assert_holders(ledger, host, PMEM, {vm: NAMESPACES[2:], second: []})
    assert ledger.provider(host).usages[PMEM] == 2


def test_a_destination_claim_cannot_take_the_migrations_devices(ledger: Ledger) -> None:
    host = device_host(ledger, PMEM, NAMESPACES)
    vm = spawn(ledger, {host: {PMEM: 2}}).consumer_uuid
    migration = start_move(ledger, vm)
    before = snapshot(ledger)
    with pytest.raises(DevicesUnavailable) as refused:
        claim_destination(ledger, vm, {host: {PMEM: 2}}, devices={host: {PMEM: ["ns-1", "ns-2"]}})
    assert migration in refused.value.fields["detail"]
    assert snapshot(ledger) == before
    assert ledger.migration(migration).generation == 1
    assert_holders(ledger, host, PMEM, {migration: NAMESPACES[:2], vm: []})


def test_a_swap_with_its_destination_takes_new_devices_in_the_same_write(ledger: Ledger) -> None:
    host = device_host(ledger, PMEM, NAMESPACES)
    vm = spawn(ledger, {host: {PMEM: 1}})
    migration = new_id()
    view = ledger.swap(vm.consumer_uuid, migration, generation(ledger, vm.consumer_uuid),
                       destination={host: {PMEM: 2}})
    assert view.new_devices == {host: {PMEM: ["ns-1", "ns-2"]}}
    assert_holders(ledger, host, PMEM, {migration: ["ns-0"], vm.consumer_uuid: ["ns-1", "ns-2"]})


def test_deleting_an_instance_mid_resize_frees_both_sets(ledger: Ledger) -> None:
    host = device_host(ledger, PMEM, NAMESPACES)
    vm = spawn(ledger, {host: {PMEM: 2}}).consumer_uuid
    migration = start_move(ledger, vm)
    claim_destination(ledger, vm, {host: {PMEM: 2}})
    assert ledger.force_release(vm) is True
    assert ledger.migration(migration).status == "aborted"
    assert_holders(ledger, host, PMEM, {vm: [], migration: []})


def test_a_device_held_by_a_pending_migration_cannot_be_removed(ledger: Ledger) -> None:
    source = device_host(ledger, PCI, SOURCE_ADDRESSES)
    target = device_host(ledger, PCI, DESTINATION_ADDRESSES)
    vm = spawn(ledger, {source: {PCI: 1}}).consumer_uuid
    migration = start_move(ledger, vm, kind="migration")
    claim_destination(ledger, vm, {target: {PCI: 1}})
    before = snapshot(ledger)
    with pytest.raises(DeviceInUse):
        ledger.set_devices(source, PCI, list(SOURCE_ADDRESSES[1:]),
                           ledger.provider(source).generation)
    assert snapshot(ledger) == before
    ledger.confirm(migration, generation(ledger, migration))
    view = ledger.set_devices(source, PCI, list(SOURCE_ADDRESSES[1:]),
                              ledger.provider(source).generation)
    assert view.inventories[PCI].total == 2
    assert_holders(ledger, source, PCI, {vm: [], migration: []})
    assert_holders(ledger, target, PCI, {vm: DESTINATION_ADDRESSES[:1]})


# -- live migration -------------------------------------------------------------------------


def _gpu_hosts(ledger: Ledger) -> tuple[str, str, str, str]:
    """A source host whose GPU has two mdevs and a destination whose GPU has three."""
    source = a_host(ledger)
    source_gpu = device_host(ledger, "VGPU", SOURCE_MDEVS, parent=source)
    target = a_host(ledger)
    target_gpu = device_host(ledger, "VGPU", DESTINATION_MDEVS, parent=target)
    return source, source_gpu, target, target_gpu


def test_live_migration_claims_around_devices_another_consumer_holds(ledger: Ledger) -> None:
    source, source_gpu, target, target_gpu = _gpu_hosts(ledger)
    middle = DESTINATION_MDEVS[1]
    neighbour = spawn(ledger, {target: {"VCPU": 1}, target_gpu: {"VGPU": 1}},
                      devices={target_gpu: {"VGPU": [middle]}}).consumer_uuid
    vm = spawn(ledger, {source: {"VCPU": 2}, source_gpu: {"VGPU": 2}}).consumer_uuid
    migration = start_move(ledger, vm, kind="live-migration")
    destination = {target: {"VCPU": 2}, target_gpu: {"VGPU": 2}}

    before = snapshot(ledger)
    with pytest.raises(DevicesUnavailable) as refused:
        claim_destination(ledger, vm, destination,
                          devices={target_gpu: {"VGPU": list(DESTINATION_MDEVS[:2])}})
    assert neighbour in refused.value.fields["detail"]
    assert snapshot(ledger) == before

    claim_destination(ledger, vm, destination)
    others = [DESTINATION_MDEVS[0], DESTINATION_MDEVS[2]]
    assert_holders(ledger, target_gpu, "VGPU", {neighbour: [middle], vm: others})
    assert_holders(ledger, source_gpu, "VGPU", {migration: SOURCE_MDEVS})
    ledger.confirm(migration, generation(ledger, migration))
    assert_holders(ledger, source_gpu, "VGPU", {migration: [], vm: []})
    assert_holders(ledger, target_gpu, "VGPU", {neighbour: [middle], vm: others})


def test_a_live_migration_that_finds_no_free_devices_rolls_back(ledger: Ledger) -> None:
    source, source_gpu, target, target_gpu = _gpu_hosts(ledger)
    neighbour = spawn(ledger, {target_gpu: {"VGPU": 2}}).consumer_uuid
    vm = spawn(ledger, {source: {"VCPU": 2}, source_gpu: {"VGPU": 2}}).consumer_uuid
    migration = start_move(ledger, vm, kind="live-migration")
    before = snapshot(ledger)
    with pytest.raises((DevicesUnavailable, InsufficientCapacity)):
        claim_destination(ledger, vm, {target: {"VCPU": 2}, target_gpu: {"VGPU": 2}})
    assert snapshot(ledger) == before
    ledger.revert(migration, ledger.migration(migration).generation, None)
    assert_holders(ledger, source_gpu, "VGPU", {vm: SOURCE_MDEVS, migration: []})
    assert_holders(ledger, target_gpu, "VGPU", {neighbour: DESTINATION_MDEVS[:2], vm: []})


def test_a_forced_live_migration_takes_the_destinations_lowest_free_device(
    ledger: Ledger,
) -> None:
    source = device_host(ledger, PMEM, NAMESPACES[:1])
    target = device_host(ledger, PMEM, NAMESPACES)
    neighbour = spawn(ledger, {target: {PMEM: 1}}).consumer_uuid
    vm = spawn(ledger, {source: {"VCPU": 1, PMEM: 1}})
    migration = new_id()
    view = ledger.force_live_migrate(vm.consumer_uuid, migration, target,
                                     generation(ledger, vm.consumer_uuid))
    assert view.new_devices == {target: {PMEM: ["ns-1"]}}
    assert_holders(ledger, source, PMEM, {migration: ["ns-0"], vm.consumer_uuid: []})
    assert_holders(ledger, target, PMEM, {neighbour: ["ns-0"], vm.consumer_uuid: ["ns-1"]})


# -- evacuation -----------------------------------------------------------------------------


@pytest.mark.parametrize("outcome", ["complete", "revert"])
def test_evacuation_holds_source_devices_until_it_ends(ledger: Ledger, outcome: str) -> None:
    source, source_gpu, target, target_gpu = _gpu_hosts(ledger)
    vm = spawn(ledger, {source: {"VCPU": 2}, source_gpu: {"VGPU": 1}},
               devices={source_gpu: {"VGPU": [SOURCE_MDEVS[1]]}})
    migration = new_id()
    view = ledger.evacuate(vm.consumer_uuid, migration, generation(ledger, vm.consumer_uuid),
                           destination={target: {"VCPU": 2}, target_gpu: {"VGPU": 1}})
    assert view.allocations == {} and view.devices == {}
    assert view.new_devices == {target_gpu: {"VGPU": [DESTINATION_MDEVS[0]]}}
    instance = vm.consumer_uuid
    assert_holders(ledger, source_gpu, "VGPU", {instance: SOURCE_MDEVS[1:], migration: []})
    assert_holders(ledger, target_gpu, "VGPU", {instance: DESTINATION_MDEVS[:1]})

    held_at = generation(ledger, instance)
    if outcome == "complete":
        ledger.complete_evacuation(migration, held_at)
        assert_holders(ledger, source_gpu, "VGPU", {instance: []})
        assert_holders(ledger, target_gpu, "VGPU", {instance: DESTINATION_MDEVS[:1]})
    else:
        ledger.revert(migration, None, held_at)
        assert_holders(ledger, source_gpu, "VGPU", {instance: SOURCE_MDEVS[1:]})
        assert_holders(ledger, target_gpu, "VGPU", {instance: []})
    assert ledger.migration(migration).status == {"complete": "completed",
                                                  "revert": "reverted"}[outcome]
