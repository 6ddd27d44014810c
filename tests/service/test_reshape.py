"""The reshaper through the service API, on every store: nova-compute moving VGPU inventory
from a compute node to a new child provider while an instance holds a VGPU, its allocation
moving in the same atomic write. A stale provider or consumer generation, a class removed
while still used, and a reshape that would leave usage above capacity are refused with
nothing written. Each provider's generation moves as Placement's (interim inventory, the
allocation write, final inventory: up to three changes)."""

from __future__ import annotations

from typing import Any

import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.audit import audit
from allocation_ledger.domain.errors import (
    ConsumerGenerationConflict,
    InsufficientCapacity,
    InvalidAllocation,
    InvalidRequest,
    InventoryInUse,
    ProviderGenerationConflict,
    ProviderNotFound,
)
from tests.builders import PROJECT, USER, a_host, an_instance, new_id, snapshot
from tests.invariants import assert_invariants

VGPU = {"total": 4}


def a_gpu_host(ledger: Ledger) -> tuple[str, str]:
    """A compute node with VGPU inventory on the root and an empty child for the pGPU."""
    host = a_host(ledger, vcpu=16, memory_mb=32768, VGPU=VGPU)
    gpu = a_host(ledger, parent=host, vcpu=None, memory_mb=None)
    return host, gpu


def on(generation: int | None, allocations: dict[str, dict[str, int]]) -> dict[str, Any]:
    """One consumer's part of a reshape."""
    return {"allocations": allocations, "project_id": PROJECT, "user_id": USER,
            "consumer_generation": generation}


def inventories(ledger: Ledger, **by_provider: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Each provider's new inventory at the generation it has now."""
    return {rp: {"resource_provider_generation": ledger.provider(rp).generation,
                 "inventories": invs} for rp, invs in by_provider.items()}


def root_to_child(ledger: Ledger, host: str, gpu: str, vgpu: dict[str, Any] = VGPU
                  ) -> dict[str, Any]:
    """The VGPU inventory moved from ``host`` to ``gpu``; the root keeps its CPU and RAM."""
    return inventories(ledger, **{host: {"VCPU": {"total": 16}, "MEMORY_MB": {"total": 32768}},
                                  gpu: {"VGPU": vgpu}})


def test_vgpu_inventory_moves_to_a_child_with_the_instance_using_it(ledger: Ledger) -> None:
    host, gpu = a_gpu_host(ledger)
    vm = an_instance(ledger, {host: {"VCPU": 2, "MEMORY_MB": 2048, "VGPU": 1}})
    before = {rp: ledger.provider(rp).generation for rp in (host, gpu)}

    views = ledger.reshape(
        root_to_child(ledger, host, gpu),
        {vm.consumer_uuid: on(vm.generation, {host: {"VCPU": 2, "MEMORY_MB": 2048},
                                              gpu: {"VGPU": 1}})},
        request={"actor": "nova-compute", "reason": "VGPU to its pGPU provider"})

    assert set(views) == {host, gpu}
    assert "VGPU" not in ledger.provider(host).inventories
    assert ledger.provider(gpu).inventories["VGPU"].total == 4
    assert ledger.provider(host).usages == {"VCPU": 2, "MEMORY_MB": 2048}
    assert ledger.provider(gpu).usages == {"VGPU": 1}
    moved = ledger.consumer(vm.consumer_uuid)
    assert moved.allocations == {host: {"MEMORY_MB": 2048, "VCPU": 2}, gpu: {"VGPU": 1}}
    assert moved.generation == vm.generation + 1  # one write named it
    # Placement's count: interim inventory, the allocation write, final inventory
    assert {rp: ledger.provider(rp).generation - before[rp] for rp in (host, gpu)} == {
        host: 3, gpu: 3}
    assert views[gpu].generation == ledger.provider(gpu).generation
    assert_invariants(ledger)
    report = audit(ledger.store)  # every position replayed, the interim one included
    assert report.ok, report.errors


def test_moving_the_inventory_without_its_allocation_is_refused(ledger: Ledger) -> None:
    host, gpu = a_gpu_host(ledger)
    an_instance(ledger, {host: {"VGPU": 1}})
    events = snapshot(ledger)
    with pytest.raises(InventoryInUse) as refused:
        ledger.reshape(root_to_child(ledger, host, gpu), {})
    assert (refused.value.provider_uuid, refused.value.resource_class) == (host, "VGPU")
    assert snapshot(ledger) == events


def test_a_stale_provider_generation_writes_nothing(ledger: Ledger) -> None:
    host, gpu = a_gpu_host(ledger)
    vm = an_instance(ledger, {host: {"VGPU": 1}})
    shape = root_to_child(ledger, host, gpu)
    ledger.set_inventories(gpu, {"CUSTOM_X": {"total": 1}}, ledger.provider(gpu).generation)
    events = snapshot(ledger)
    with pytest.raises(ProviderGenerationConflict) as refused:
        ledger.reshape(shape, {vm.consumer_uuid: on(vm.generation, {gpu: {"VGPU": 1}})})
    err = refused.value
    assert (err.provider_uuid, err.expected, err.actual) == (
        gpu, shape[gpu]["resource_provider_generation"], ledger.provider(gpu).generation)
    assert snapshot(ledger) == events
    assert ledger.consumer(vm.consumer_uuid).allocations == {host: {"VGPU": 1}}


def test_a_stale_consumer_generation_writes_nothing(ledger: Ledger) -> None:
    host, gpu = a_gpu_host(ledger)
    vm = an_instance(ledger, {host: {"VGPU": 1}})
    events = snapshot(ledger)
    with pytest.raises(ConsumerGenerationConflict):
        ledger.reshape(root_to_child(ledger, host, gpu),
                       {vm.consumer_uuid: on(vm.generation + 1, {gpu: {"VGPU": 1}})})
    assert snapshot(ledger) == events


def test_a_reshape_leaving_usage_above_capacity_is_refused(ledger: Ledger) -> None:
    host, gpu = a_gpu_host(ledger)
    vms = [an_instance(ledger, {host: {"VGPU": 1}}) for _ in range(2)]
    events = snapshot(ledger)
    with pytest.raises(InsufficientCapacity) as refused:
        ledger.reshape(root_to_child(ledger, host, gpu, {"total": 1}),
                       {vm.consumer_uuid: on(vm.generation, {gpu: {"VGPU": 1}}) for vm in vms})
    assert (refused.value.provider_uuid, refused.value.resource_class) == (gpu, "VGPU")
    assert snapshot(ledger) == events


def test_unit_rules_of_the_new_inventory_apply(ledger: Ledger) -> None:
    host, gpu = a_gpu_host(ledger)
    vm = an_instance(ledger, {host: {"VGPU": 2}})
    events = snapshot(ledger)
    with pytest.raises(InvalidAllocation):
        ledger.reshape(root_to_child(ledger, host, gpu, {"total": 4, "max_unit": 1}),
                       {vm.consumer_uuid: on(vm.generation, {gpu: {"VGPU": 2}})})
    assert snapshot(ledger) == events


def test_an_unknown_provider_writes_nothing(ledger: Ledger) -> None:
    host, _ = a_gpu_host(ledger)
    events = snapshot(ledger)
    with pytest.raises(ProviderNotFound):
        ledger.reshape({new_id(): {"resource_provider_generation": 0, "inventories": {}}}, {})
    with pytest.raises(InvalidRequest, match="inventories"):
        ledger.reshape({}, {})
    assert snapshot(ledger) == events
    assert ledger.provider(host).inventories["VGPU"].total == 4


def test_consumers_are_created_emptied_and_left_alone(ledger: Ledger) -> None:
    """Placement's consolidation: new consumers take over, an old one is emptied, and one
    that holds nothing and is given nothing is left out (its generation is checked)."""
    host, gpu = a_gpu_host(ledger)
    old = an_instance(ledger, {host: {"VGPU": 1}})
    idle, new = new_id(), new_id()
    ledger.reshape(root_to_child(ledger, host, gpu),
                   {old.consumer_uuid: on(old.generation, {}),
                    new: on(None, {gpu: {"VGPU": 1}}), idle: on(None, {})})
    assert ledger.consumer(old.consumer_uuid).allocations == {}
    assert ledger.consumer(new).allocations == {gpu: {"VGPU": 1}}
    assert ledger.consumer(idle).generation is None
    with pytest.raises(ConsumerGenerationConflict):
        ledger.reshape(inventories(ledger, **{gpu: {"VGPU": VGPU}}), {idle: on(1, {})})


def test_an_empty_inventory_leaves_out_the_interim_step(ledger: Ledger) -> None:
    """Placement skips the interim inventory of a provider given none: a child emptied by
    a reshape moves twice (the allocation write, the final inventory)."""
    host, gpu = a_gpu_host(ledger)
    vm = an_instance(ledger, {host: {"VGPU": 1}})
    ledger.reshape(root_to_child(ledger, host, gpu),
                   {vm.consumer_uuid: on(vm.generation, {gpu: {"VGPU": 1}})})
    before = {rp: ledger.provider(rp).generation for rp in (host, gpu)}
    back = inventories(ledger, **{host: {"VCPU": {"total": 16}, "MEMORY_MB": {"total": 32768},
                                         "VGPU": VGPU}, gpu: {}})
    ledger.reshape(back, {vm.consumer_uuid: on(vm.generation + 1, {host: {"VGPU": 1}})})
    assert ledger.provider(gpu).inventories == {}
    assert ledger.provider(host).usages["VGPU"] == 1
    assert {rp: ledger.provider(rp).generation - before[rp] for rp in (host, gpu)} == {
        host: 3, gpu: 2}


def test_a_migration_consumer_may_be_named_only_with_what_it_holds(ledger: Ledger) -> None:
    """Nova names every consumer of the tree; a resize's migration holding the source is
    left as it is, and moving its allocations is refused (they change only through the
    move commands), with nothing written."""
    host, gpu = a_gpu_host(ledger)
    other = a_host(ledger)
    vm = an_instance(ledger, {host: {"VCPU": 2}})
    moving = an_instance(ledger, {host: {"VCPU": 1}})
    migration = new_id()
    ledger.swap(moving.consumer_uuid, migration, moving.generation, kind="resize")
    held = ledger.consumer(migration)
    shape = inventories(ledger, **{host: {"VCPU": {"total": 16}}, gpu: {"VGPU": VGPU}})
    events = snapshot(ledger)
    with pytest.raises(InvalidRequest, match="migration consumers change only"):
        ledger.reshape(shape, {migration: on(held.generation, {other: {"VCPU": 1}})})
    assert snapshot(ledger) == events
    ledger.reshape(shape, {vm.consumer_uuid: on(vm.generation, {host: {"VCPU": 2}}),
                           migration: on(held.generation, {host: {"VCPU": 1}})})
    assert ledger.consumer(migration) == held
    assert ledger.provider(gpu).inventories["VGPU"].total == 4


def test_a_reshape_through_group_commit(url: str) -> None:
    """With group commit on, a reshape without a command id is decided in a group like any
    command: the same outcome, and a stale generation is refused all the same."""
    with open_ledger(url, group_commit=True) as grouped:
        host, gpu = a_gpu_host(grouped)
        vm = an_instance(grouped, {host: {"VGPU": 1}})
        shape = root_to_child(grouped, host, gpu)
        grouped.reshape(shape, {vm.consumer_uuid: on(vm.generation, {gpu: {"VGPU": 1}})})
        assert grouped.provider(gpu).usages == {"VGPU": 1}
        with pytest.raises(ProviderGenerationConflict):
            grouped.reshape(shape, {})
        assert_invariants(grouped)
