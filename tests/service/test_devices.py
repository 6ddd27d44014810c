"""Device-backed classes on one host: declare, spawn, exhaust, release, name, add, remove.

Three kinds of device, as Nova has them: vPMEM namespaces on a host (a ``CUSTOM_PMEM_*``
class on the root), vGPUs on one child provider per physical GPU (``VGPU``, devices are mdev
UUIDs) and PCI devices by address (``PCI_DEVICE`` or ``CUSTOM_PCI_*``). After every step the
docs/guarantees.md §5 invariants are checked and so is exactly which device ids each consumer holds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import pytest

from allocation_ledger import Ledger
from allocation_ledger.domain.errors import (
    DeviceInUse,
    DevicesUnavailable,
    InvalidInventory,
    InvalidRequest,
    LedgerError,
    ProviderGenerationConflict,
)
from tests.builders import PROJECT, USER, a_host, an_instance, new_id, snapshot
from tests.invariants import assert_invariants
from tests.service import devicing
from tests.service.devicing import NAMESPACES, PCI, PMEM, device_host, spawn

#: mdev UUIDs of two physical GPUs, in sorted order
GPU0_MDEVS = ("1f7b0d3e-0000-4000-8000-00000000a001", "1f7b0d3e-0000-4000-8000-00000000a002")
GPU1_MDEVS = ("8c2e55a1-0000-4000-8000-00000000b001", "8c2e55a1-0000-4000-8000-00000000b002")
#: PCI addresses, in sorted order
ADDRESSES = ("0000:81:00.1", "0000:81:00.2", "0000:82:00.0")


def assert_holders(ledger: Ledger, provider: str, rc: str,
                   expected: Mapping[str, Sequence[str]]) -> None:
    """:func:`devicing.assert_holders`, also checking that the class's free capacity equals
    its free devices (no reserved, ratio 1 in these tests)."""
    devicing.assert_holders(ledger, provider, rc, expected, free_is_devices=True)


# -- declaring devices ----------------------------------------------------------------------


def test_declaring_devices_makes_the_inventory_total_their_count(ledger: Ledger) -> None:
    host = a_host(ledger)
    generation = ledger.provider(host).generation
    view = ledger.set_devices(host, PMEM, list(reversed(NAMESPACES)), generation)
    assert view.generation == generation + 1
    assert view.inventories[PMEM].total == len(NAMESPACES)
    assert view.devices == {PMEM: dict.fromkeys(NAMESPACES)}
    assert_holders(ledger, host, PMEM, {})


# -- spawn, exhaustion, release -------------------------------------------------------------


def test_spawn_takes_the_lowest_free_pmem_namespaces(ledger: Ledger) -> None:
    host = device_host(ledger, PMEM, NAMESPACES)
    first = spawn(ledger, {host: {"VCPU": 2, PMEM: 2}})
    assert first.devices == {host: {PMEM: ["ns-0", "ns-1"]}}
    second = spawn(ledger, {host: {"VCPU": 2, PMEM: 1}})
    assert second.devices == {host: {PMEM: ["ns-2"]}}
    assert ledger.provider(host).usages[PMEM] == 3
    assert_holders(ledger, host, PMEM, {first.consumer_uuid: ["ns-0", "ns-1"],
                                        second.consumer_uuid: ["ns-2"]})


def test_vgpus_come_from_the_gpu_child_the_claim_names(ledger: Ledger) -> None:
    host = a_host(ledger)
    gpu0 = device_host(ledger, "VGPU", GPU0_MDEVS, parent=host, name="pgpu-0")
    gpu1 = device_host(ledger, "VGPU", GPU1_MDEVS, parent=host, name="pgpu-1")
    vm = spawn(ledger, {host: {"VCPU": 4}, gpu1: {"VGPU": 1}})
    assert vm.devices == {gpu1: {"VGPU": [GPU1_MDEVS[0]]}}
    other = spawn(ledger, {host: {"VCPU": 4}, gpu0: {"VGPU": 2}})
    assert other.devices == {gpu0: {"VGPU": list(GPU0_MDEVS)}}
    assert ledger.provider(host).devices == {}
    assert_holders(ledger, gpu0, "VGPU", {other.consumer_uuid: GPU0_MDEVS})
    assert_holders(ledger, gpu1, "VGPU", {vm.consumer_uuid: [GPU1_MDEVS[0]]})


@pytest.mark.parametrize("rc", [PCI, "CUSTOM_PCI_8086_1572"])
def test_pci_devices_are_handed_out_by_address(ledger: Ledger, rc: str) -> None:
    host = device_host(ledger, rc, list(reversed(ADDRESSES)))
    vm = spawn(ledger, {host: {"VCPU": 1, rc: 2}})
    assert vm.devices == {host: {rc: ["0000:81:00.1", "0000:81:00.2"]}}
    assert_holders(ledger, host, rc, {vm.consumer_uuid: ADDRESSES[:2]})


def test_a_claim_beyond_the_free_devices_is_refused_and_writes_nothing(ledger: Ledger) -> None:
    host = device_host(ledger, PMEM, NAMESPACES)
    vm = spawn(ledger, {host: {"VCPU": 1, PMEM: 3}})
    before = snapshot(ledger)
    with pytest.raises(DevicesUnavailable) as refused:
        an_instance(ledger, {host: {"VCPU": 1, PMEM: 2}})
    assert refused.value.fields["resource_class"] == PMEM
    assert refused.value.fields["provider_uuid"] == host
    assert refused.value.fields["free"] == 1
    assert snapshot(ledger) == before
    assert_holders(ledger, host, PMEM, {vm.consumer_uuid: NAMESPACES[:3]})


def test_running_out_of_devices_is_devices_unavailable(ledger: Ledger) -> None:
    host = device_host(ledger, PMEM, NAMESPACES)
    spawn(ledger, {host: {PMEM: 3}})
    with pytest.raises(DevicesUnavailable) as refused:
        an_instance(ledger, {host: {PMEM: 2}})
    assert refused.value.fields["resource_class"] == PMEM
    assert (refused.value.fields["needed"], refused.value.fields["free"]) == (2, 1)


def test_release_frees_exactly_the_consumers_devices(ledger: Ledger) -> None:
    host = device_host(ledger, PMEM, NAMESPACES)
    first = spawn(ledger, {host: {PMEM: 2}})
    second = spawn(ledger, {host: {PMEM: 2}})
    ledger.release(first.consumer_uuid, first.generation)
    assert ledger.consumer(first.consumer_uuid).devices == {}
    assert_holders(ledger, host, PMEM, {second.consumer_uuid: ["ns-2", "ns-3"]})
    assert ledger.force_release(second.consumer_uuid) is True
    assert_holders(ledger, host, PMEM, {})
    third = spawn(ledger, {host: {PMEM: 1}})
    assert_holders(ledger, host, PMEM, {third.consumer_uuid: ["ns-0"]})


def test_a_new_claim_keeps_held_devices_and_grows_or_shrinks_from_them(ledger: Ledger) -> None:
    host = device_host(ledger, PMEM, NAMESPACES)
    vm = spawn(ledger, {host: {PMEM: 1}})
    neighbour = spawn(ledger, {host: {PMEM: 1}})
    grown = ledger.claim(vm.consumer_uuid, {host: {PMEM: 3}}, vm.generation,
                         project_id=PROJECT, user_id=USER)
    assert_holders(ledger, host, PMEM, {vm.consumer_uuid: ["ns-0", "ns-2", "ns-3"],
                                        neighbour.consumer_uuid: ["ns-1"]})
    ledger.claim(vm.consumer_uuid, {host: {PMEM: 1}}, grown.generation,
                 project_id=PROJECT, user_id=USER)
    assert_holders(ledger, host, PMEM, {vm.consumer_uuid: ["ns-0"],
                                        neighbour.consumer_uuid: ["ns-1"]})


# -- naming devices -------------------------------------------------------------------------


def test_named_free_devices_are_the_ones_taken(ledger: Ledger) -> None:
    host = a_host(ledger)
    gpu = device_host(ledger, "VGPU", GPU0_MDEVS + GPU1_MDEVS, parent=host)
    vm = spawn(ledger, {host: {"VCPU": 1}, gpu: {"VGPU": 2}},
               devices={gpu: {"VGPU": [GPU1_MDEVS[1], GPU0_MDEVS[1]]}})
    assert vm.devices == {gpu: {"VGPU": [GPU0_MDEVS[1], GPU1_MDEVS[1]]}}
    other = spawn(ledger, {host: {"VCPU": 1}, gpu: {"VGPU": 1}})
    assert_holders(ledger, gpu, "VGPU", {vm.consumer_uuid: [GPU0_MDEVS[1], GPU1_MDEVS[1]],
                                         other.consumer_uuid: [GPU0_MDEVS[0]]})


def test_naming_a_held_device_is_refused(ledger: Ledger) -> None:
    host = device_host(ledger, PCI, ADDRESSES)
    holder = spawn(ledger, {host: {PCI: 1}})
    before = snapshot(ledger)
    with pytest.raises(DevicesUnavailable) as refused:
        an_instance(ledger, {host: {PCI: 2}}, devices={host: {PCI: list(ADDRESSES[:2])}})
    assert refused.value.fields["resource_class"] == PCI
    assert (refused.value.fields["needed"], refused.value.fields["free"]) == (2, 2)
    detail = refused.value.fields["detail"]
    assert ADDRESSES[0] in detail and holder.consumer_uuid in detail
    assert snapshot(ledger) == before
    assert_holders(ledger, host, PCI, {holder.consumer_uuid: ADDRESSES[:1]})


@pytest.mark.parametrize("named", [["0000:99:00.0"], ["0000:81:00.1", "0000:81:00.1"]],
                         ids=["unknown", "one-named-twice"])
def test_naming_unknown_or_too_few_devices_is_refused(ledger: Ledger, named: list[str]) -> None:
    host = device_host(ledger, PCI, ADDRESSES)
    before = snapshot(ledger)
    with pytest.raises(InvalidRequest) as refused:
        an_instance(ledger, {host: {PCI: len(named)}}, devices={host: {PCI: named}})
    assert refused.value.fields["resource_class"] == PCI
    assert snapshot(ledger) == before
    assert_holders(ledger, host, PCI, {})


@pytest.mark.parametrize("where", ["class-without-devices", "class-not-claimed",
                                   "provider-not-claimed"])
def test_naming_devices_the_claim_cannot_hold_is_refused(ledger: Ledger, where: str) -> None:
    host = device_host(ledger, PMEM, NAMESPACES)
    elsewhere = device_host(ledger, PMEM, NAMESPACES)
    named = {
        "class-without-devices": {host: {"VCPU": ["ns-0"]}},
        "class-not-claimed": {host: {PMEM: ["ns-0"]}},
        "provider-not-claimed": {elsewhere: {PMEM: ["ns-0"]}},
    }[where]
    before = snapshot(ledger)
    with pytest.raises(InvalidRequest):
        an_instance(ledger, {host: {"VCPU": 1}}, devices=named)
    assert snapshot(ledger) == before


def test_one_write_can_hand_a_device_from_one_consumer_to_another(ledger: Ledger) -> None:
    host = device_host(ledger, PCI, ADDRESSES)
    giver = spawn(ledger, {host: {PCI: 1}})
    taker = new_id()
    ledger.write_allocations([
        {"consumer_uuid": giver.consumer_uuid, "allocations": {},
         "expected_generation": giver.generation, "project_id": PROJECT, "user_id": USER},
        {"consumer_uuid": taker, "allocations": {host: {PCI: 1}}, "expected_generation": None,
         "project_id": PROJECT, "user_id": USER, "devices": {host: {PCI: [ADDRESSES[0]]}}},
    ])
    assert_holders(ledger, host, PCI, {taker: ADDRESSES[:1], giver.consumer_uuid: []})


# -- adding and removing devices ------------------------------------------------------------


def test_added_devices_grow_the_total_and_are_handed_out(ledger: Ledger) -> None:
    host = device_host(ledger, PMEM, NAMESPACES[:2])
    vm = spawn(ledger, {host: {PMEM: 2}})
    view = ledger.set_devices(host, PMEM, list(NAMESPACES), ledger.provider(host).generation)
    assert view.inventories[PMEM].total == 4
    assert_holders(ledger, host, PMEM, {vm.consumer_uuid: NAMESPACES[:2]})
    other = spawn(ledger, {host: {PMEM: 2}})
    assert_holders(ledger, host, PMEM, {vm.consumer_uuid: NAMESPACES[:2],
                                        other.consumer_uuid: NAMESPACES[2:]})


def test_removing_free_devices_shrinks_the_total_and_keeps_holders(ledger: Ledger) -> None:
    host = device_host(ledger, PMEM, NAMESPACES)
    vm = spawn(ledger, {host: {PMEM: 1}}, devices={host: {PMEM: ["ns-2"]}})
    view = ledger.set_devices(host, PMEM, ["ns-2", "ns-3"], ledger.provider(host).generation)
    assert view.inventories[PMEM].total == 2
    assert view.devices == {PMEM: {"ns-2": vm.consumer_uuid, "ns-3": None}}
    assert_holders(ledger, host, PMEM, {vm.consumer_uuid: ["ns-2"]})


def test_removing_a_held_device_is_refused(ledger: Ledger) -> None:
    host = device_host(ledger, PMEM, NAMESPACES)
    vm = spawn(ledger, {host: {PMEM: 2}})
    before = snapshot(ledger)
    with pytest.raises(DeviceInUse) as refused:
        ledger.set_devices(host, PMEM, ["ns-0", "ns-2", "ns-3"],
                           ledger.provider(host).generation)
    assert refused.value.fields["resource_class"] == PMEM
    assert "ns-1" in refused.value.fields["reason"]
    assert snapshot(ledger) == before
    assert ledger.provider(host).inventories[PMEM].total == 4
    assert_holders(ledger, host, PMEM, {vm.consumer_uuid: ["ns-0", "ns-1"]})


def test_removing_every_free_device_removes_the_class(ledger: Ledger) -> None:
    host = device_host(ledger, PMEM, NAMESPACES)
    vm = spawn(ledger, {host: {PMEM: 1}})
    ledger.release(vm.consumer_uuid, vm.generation)
    view = ledger.set_devices(host, PMEM, [], ledger.provider(host).generation)
    assert PMEM not in view.inventories
    assert view.devices == {}
    assert_invariants(ledger)


def _drift_the_total(ledger: Ledger, host: str, plain: str) -> None:
    ledger.set_inventory(host, PCI, {"total": 5}, ledger.provider(host).generation)


def _back_plain_usage_with_devices(ledger: Ledger, host: str, plain: str) -> None:
    ledger.set_devices(plain, "CUSTOM_PCI_8086_1572", list(ADDRESSES[:2]),
                       ledger.provider(plain).generation)


def _use_a_stale_generation(ledger: Ledger, host: str, plain: str) -> None:
    ledger.set_devices(host, PCI, list(ADDRESSES[:1]), ledger.provider(host).generation - 1)


@pytest.mark.parametrize(("change", "error"), [
    (_drift_the_total, InvalidInventory),
    (_back_plain_usage_with_devices, DeviceInUse),
    (_use_a_stale_generation, ProviderGenerationConflict),
])
def test_device_inventory_changes_that_break_the_rules_write_nothing(
    ledger: Ledger, change: Callable[[Ledger, str, str], None], error: type[LedgerError]
) -> None:
    host = device_host(ledger, PCI, ADDRESSES)
    plain = a_host(ledger, CUSTOM_PCI_8086_1572={"total": 2})
    spawn(ledger, {plain: {"CUSTOM_PCI_8086_1572": 1}})
    before = snapshot(ledger)
    with pytest.raises(error):
        change(ledger, host, plain)
    assert snapshot(ledger) == before
    assert_holders(ledger, host, PCI, {})
