"""Providers through the service API, on every store: registration, inventory rules,
over-capacity reporting, deletion and trees (docs/guarantees.md §2)."""

from __future__ import annotations

from typing import Any

import pytest

from allocation_ledger import Ledger
from allocation_ledger.domain.errors import (
    InvalidInventory,
    InvalidRequest,
    InventoryInUse,
    LedgerError,
    ProviderExists,
    ProviderGenerationConflict,
    ProviderHasChildren,
    ProviderInUse,
    ProviderNameTaken,
    ProviderNotFound,
)
from allocation_ledger.domain.values import MAX_INT, Inventory
from tests.builders import a_host, an_instance, new_id, snapshot
from tests.invariants import assert_invariants
from tests.service import shared_ledger_fixture
from tests.service.claiming import claim

shared_ledger = shared_ledger_fixture()


# -- registration and inventory ------------------------------------------------------------


def test_a_root_provider_without_inventory(ledger: Ledger) -> None:
    """Registration is generation 0, as Placement numbers it; a root is its own root."""
    host = new_id()
    view = ledger.register_provider(host, "compute-1")
    assert (view.provider_uuid, view.name, view.generation) == (host, "compute-1", 0)
    assert (view.parent_uuid, view.root_uuid, view.children) == (None, host, ())
    assert view.inventories == {}
    assert ledger.provider(host) == view


def test_inventories_given_at_registration_use_placements_defaults(ledger: Ledger) -> None:
    """Registered and InventoriesSet in one append: generation 1, defaults filled in."""
    before = len(snapshot(ledger))
    host = a_host(ledger, vcpu=8, memory_mb=None, DISK_GB={"total": 100, "reserved": 10})
    view = ledger.provider(host)
    assert view.generation == 1
    # registered, inventories set, the name taken, the record
    assert len(snapshot(ledger)) == before + 4
    assert view.inventories == {
        "VCPU": Inventory(total=8, reserved=0, min_unit=1, max_unit=MAX_INT, step_size=1,
                          allocation_ratio=1.0),
        "DISK_GB": Inventory(total=100, reserved=10),
    }
    assert view.usages == {"VCPU": 0, "DISK_GB": 0}
    assert (view.classes["DISK_GB"].capacity, view.classes["DISK_GB"].free) == (90, 90)


@pytest.mark.parametrize(
    ("fields", "capacity"),
    [
        pytest.param({"total": 1}, 1, id="total-1"),
        pytest.param({"total": 4, "reserved": 4}, 0, id="reserved-equals-total"),
        pytest.param({"total": 3, "allocation_ratio": 1.5}, 4, id="ratio-1.5"),
        pytest.param({"total": 10, "reserved": 2, "allocation_ratio": 0.5}, 4, id="ratio-0.5"),
        pytest.param({"total": 4, "allocation_ratio": 2}, 8, id="integer-ratio"),
        pytest.param({"total": MAX_INT, "reserved": MAX_INT, "min_unit": MAX_INT,
                      "max_unit": MAX_INT, "step_size": MAX_INT}, 0, id="max-int"),
        pytest.param({"total": 8, "min_unit": 2, "max_unit": 4, "step_size": 2}, 8,
                     id="units"),
    ],
)
def test_valid_inventories_are_accepted(
    shared_ledger: Ledger, fields: dict[str, Any], capacity: int
) -> None:
    """Boundary values Placement accepts are stored as given, and capacity follows."""
    host = a_host(shared_ledger, vcpu=None, memory_mb=None, CUSTOM_WIDGET=fields)
    view = shared_ledger.provider(host)
    assert view.inventories["CUSTOM_WIDGET"] == Inventory(**fields)
    assert view.classes["CUSTOM_WIDGET"].capacity == capacity
    assert view.classes["CUSTOM_WIDGET"].free == capacity


BAD_INVENTORIES = [
    pytest.param({"total": 0}, InvalidInventory, "total must be at least 1", id="total-0"),
    pytest.param({"total": -1}, InvalidInventory, "total", id="total-negative"),
    pytest.param({"total": 4, "reserved": 5}, InvalidInventory, "reserved 5 exceeds total 4",
                 id="reserved-above-total"),
    pytest.param({"total": 4, "reserved": -1}, InvalidInventory, "reserved", id="reserved-neg"),
    pytest.param({"total": 4, "min_unit": 0}, InvalidInventory, "min_unit", id="min-unit-0"),
    pytest.param({"total": 4, "max_unit": 0}, InvalidInventory, "max_unit", id="max-unit-0"),
    pytest.param({"total": 4, "step_size": 0}, InvalidInventory, "step_size", id="step-0"),
    pytest.param({"total": 4, "allocation_ratio": 0}, InvalidInventory, "allocation_ratio",
                 id="ratio-0"),
    pytest.param({"total": 4, "allocation_ratio": -2.0}, InvalidInventory, "allocation_ratio",
                 id="ratio-negative"),
    pytest.param({"total": MAX_INT + 1}, InvalidInventory, "exceeds", id="total-above-max"),
    pytest.param({"total": 4, "max_unit": MAX_INT + 1}, InvalidInventory, "max_unit",
                 id="max-unit-above-max"),
    pytest.param({"total": 4.5}, InvalidRequest, "total", id="total-float"),
    pytest.param({"total": True}, InvalidRequest, "total", id="total-bool"),
    pytest.param({"reserved": 1}, InvalidRequest, "total", id="total-missing"),
    pytest.param({"total": 4, "colour": "red"}, InvalidRequest, "colour", id="unknown-field"),
    pytest.param({"total": 4, "allocation_ratio": True}, InvalidRequest, "allocation_ratio",
                 id="ratio-bool"),
    pytest.param({"total": 4, "allocation_ratio": "1.5"}, InvalidRequest, "allocation_ratio",
                 id="ratio-string"),
]


@pytest.mark.parametrize(("fields", "error", "says"), BAD_INVENTORIES)
def test_invalid_inventory_is_refused(
    shared_ledger: Ledger, fields: dict[str, Any], error: type[LedgerError], says: str
) -> None:
    """At registration the provider is not registered at all; on update no class changes."""
    host = a_host(shared_ledger, vcpu=8)
    view = shared_ledger.provider(host)
    before = snapshot(shared_ledger)
    newcomer = new_id()
    with pytest.raises(error) as caught:
        shared_ledger.register_provider(newcomer, "bad", inventories={"VCPU": fields})
    assert says in str(caught.value)
    with pytest.raises(error) as caught:
        shared_ledger.set_inventories(host, {"VCPU": fields, "MEMORY_MB": {"total": 1}},
                               view.generation)
    err = caught.value
    assert says in str(err)
    if isinstance(err, InvalidInventory):
        assert (err.fields["provider_uuid"], err.fields["resource_class"]) == (host, "VCPU")
    assert snapshot(shared_ledger) == before
    assert shared_ledger.provider(host) == view
    with pytest.raises(ProviderNotFound):
        shared_ledger.provider(newcomer)


def test_set_inventories_replaces_the_whole_set(ledger: Ledger) -> None:
    """Classes left out are removed (when unused); the generation goes up by one."""
    host = a_host(ledger, vcpu=8, memory_mb=1024)
    view = ledger.set_inventories(host, {"VCPU": {"total": 16, "allocation_ratio": 4.0},
                                         "DISK_GB": {"total": 50}}, 1)
    assert view.generation == 2
    assert view.inventories == {"VCPU": Inventory(total=16, allocation_ratio=4.0),
                                "DISK_GB": Inventory(total=50)}
    assert view.classes["VCPU"].capacity == 64


def test_set_inventory_and_delete_inventory_touch_one_class(ledger: Ledger) -> None:
    """The single-class commands keep the other classes as they were."""
    host = a_host(ledger, vcpu=8, memory_mb=1024)
    view = ledger.set_inventory(host, "DISK_GB", {"total": 10, "step_size": 5}, 1)
    assert view.generation == 2
    assert view.inventories == {"VCPU": Inventory(total=8), "MEMORY_MB": Inventory(total=1024),
                                "DISK_GB": Inventory(total=10, step_size=5)}
    view = ledger.set_inventory(host, "VCPU", {"total": 4}, 2)
    assert view.inventories["VCPU"] == Inventory(total=4)
    view = ledger.delete_inventory(host, "MEMORY_MB", 3)
    assert (view.generation, sorted(view.inventories)) == (4, ["DISK_GB", "VCPU"])


def test_removing_a_class_in_use_is_refused(ledger: Ledger) -> None:
    """InventoryInUse names the provider, the class and how much is still allocated."""
    host = a_host(ledger, vcpu=8, memory_mb=1024)
    an_instance(ledger, {host: {"VCPU": 3}})
    generation = ledger.provider(host).generation
    before = snapshot(ledger)
    with pytest.raises(InventoryInUse) as caught:
        ledger.delete_inventory(host, "VCPU", generation)
    assert caught.value.fields == {"provider_uuid": host, "resource_class": "VCPU", "used": 3}
    assert "3 still allocated" in str(caught.value)
    with pytest.raises(InventoryInUse):
        ledger.set_inventories(host, {"MEMORY_MB": {"total": 1024}}, generation)
    assert snapshot(ledger) == before
    ledger.delete_inventory(host, "MEMORY_MB", generation)  # the unused class may go


def test_lowering_inventory_below_usage_reports_over_capacity(ledger: Ledger) -> None:
    """Allowed, as in Placement; the provider then says it is over capacity."""
    host = a_host(ledger, vcpu=8)
    an_instance(ledger, {host: {"VCPU": 6}})
    view = ledger.set_inventory(host, "VCPU", {"total": 4}, ledger.provider(host).generation)
    vcpu = view.classes["VCPU"]
    assert (vcpu.used, vcpu.capacity, vcpu.free, vcpu.over_capacity) == (6, 4, 0, True)
    assert view.classes["MEMORY_MB"].over_capacity is False
    view = ledger.set_inventory(host, "VCPU", {"total": 8, "reserved": 2}, view.generation)
    assert (view.classes["VCPU"].free, view.classes["VCPU"].over_capacity) == (0, False)
    assert_invariants(ledger)


# -- unknown providers ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(lambda led, rp: led.provider(rp), id="provider"),
        pytest.param(lambda led, rp: led.tree(rp), id="tree"),
        pytest.param(lambda led, rp: led.usages_in_tree(rp), id="usages_in_tree"),
        pytest.param(lambda led, rp: led.set_inventories(rp, {"VCPU": {"total": 1}}, 1),
                     id="set_inventories"),
        pytest.param(lambda led, rp: led.set_inventory(rp, "VCPU", {"total": 1}, 1),
                     id="set_inventory"),
        pytest.param(lambda led, rp: led.delete_inventory(rp, "VCPU", 1), id="delete_inventory"),
        pytest.param(lambda led, rp: led.delete_provider(rp, 1), id="delete_provider"),
        pytest.param(lambda led, rp: led.register_provider(new_id(), "child", parent_uuid=rp),
                     id="register-under-it"),
    ],
)
def test_unknown_provider(shared_ledger: Ledger, command: Any) -> None:
    """Every command and read that names an unknown provider says which one."""
    a_host(shared_ledger)
    missing = new_id()
    before = snapshot(shared_ledger)
    with pytest.raises(ProviderNotFound) as caught:
        command(shared_ledger, missing)
    assert caught.value.fields == {"provider_uuid": missing}
    assert missing in str(caught.value)
    assert snapshot(shared_ledger) == before


# -- deletion ------------------------------------------------------------------------------


def test_a_provider_with_allocations_cannot_be_deleted(ledger: Ledger) -> None:
    """ProviderInUse until the last consumer has gone."""
    host = a_host(ledger, vcpu=8, memory_mb=1024)
    vm = an_instance(ledger, {host: {"VCPU": 1, "MEMORY_MB": 512}})
    generation = ledger.provider(host).generation
    before = snapshot(ledger)
    with pytest.raises(ProviderInUse) as caught:
        ledger.delete_provider(host, generation)
    assert caught.value.fields == {"provider_uuid": host,
                                   "reason": "it has allocations of MEMORY_MB, VCPU"}
    assert "cannot be deleted" in str(caught.value)
    assert snapshot(ledger) == before
    ledger.release(vm.consumer_uuid, vm.generation)
    ledger.delete_provider(host, ledger.provider(host).generation)
    with pytest.raises(ProviderNotFound):
        ledger.provider(host)


def test_a_provider_with_children_cannot_be_deleted(ledger: Ledger) -> None:
    """Children go first; the parent then forgets them."""
    root = a_host(ledger)
    child = a_host(ledger, parent=root)
    assert ledger.provider(root).children == (child,)
    before = snapshot(ledger)
    with pytest.raises(ProviderHasChildren) as caught:
        ledger.delete_provider(root, ledger.provider(root).generation)
    assert isinstance(caught.value, ProviderInUse)
    assert caught.value.fields == {"provider_uuid": root, "reason": f"it has children {child}",
                                   "children": [child]}
    assert snapshot(ledger) == before
    root_generation = ledger.provider(root).generation
    ledger.delete_provider(child, ledger.provider(child).generation)
    assert ledger.provider(root).children == ()
    assert ledger.provider(root).generation == root_generation  # Placement's: not a change
    ledger.delete_provider(root, root_generation)


def test_a_child_does_not_change_its_parents_generation(ledger: Ledger) -> None:
    """Placement's numbering: 0 at registration, +1 per change of the provider itself; a
    child registered under it and a rename are not changes (DESIGN §3)."""
    root = new_id()
    assert ledger.register_provider(root, "root").generation == 0
    a_host(ledger, parent=root)
    assert ledger.provider(root).generation == 0
    assert ledger.rename_provider(root, "root-2", 0).generation == 0
    view = ledger.set_inventories(root, {"DISK_GB": {"total": 10}}, 0)
    assert view.generation == 1
    with pytest.raises(ProviderGenerationConflict) as caught:
        ledger.set_inventories(root, {"DISK_GB": {"total": 20}}, 0)
    assert (caught.value.expected, caught.value.actual) == (0, 1)


def test_a_deleted_providers_uuid_can_be_registered_again(ledger: Ledger) -> None:
    """Nova restarting a compute service with its stable id: the UUID is registered anew,
    at generation 0, with nothing of its past state; its history stays in its stream."""
    root = a_host(ledger, vcpu=8)
    host = a_host(ledger, vcpu=4, parent=root, name="compute-a")
    vm = an_instance(ledger, {host: {"VCPU": 1}})
    ledger.release(vm.consumer_uuid, vm.generation)
    ledger.delete_provider(host, ledger.provider(host).generation)
    with pytest.raises(ProviderNotFound):
        ledger.provider(host)
    again = ledger.register_provider(host, "compute-a")
    assert (again.generation, again.parent_uuid, again.root_uuid) == (0, None, host)
    assert (again.inventories, again.usages, again.devices) == ({}, {}, {})
    with pytest.raises(ProviderExists):
        ledger.register_provider(host, "compute-b")
    assert ledger.set_inventories(host, {"VCPU": {"total": 2}}, 0).generation == 1
    assert host in ledger.providers()
    assert_invariants(ledger)


def test_a_name_is_held_by_one_provider(ledger: Ledger) -> None:
    """Names are unique among live providers, by the store's key (a name's stream): a
    second registration or a rename to a taken name is refused with nothing written; a
    deleted or renamed provider's name is free again."""
    first = a_host(ledger, name="compute-1")
    before = snapshot(ledger)
    with pytest.raises(ProviderNameTaken) as caught:
        ledger.register_provider(new_id(), "compute-1")
    assert caught.value.fields == {"name": "compute-1", "provider_uuid": first}
    other = a_host(ledger, name="compute-2")
    with pytest.raises(ProviderNameTaken):
        ledger.rename_provider(other, "compute-1", ledger.provider(other).generation)
    assert len(snapshot(ledger)) == len(before) + 4  # only compute-2's registration
    ledger.rename_provider(first, "compute-9", ledger.provider(first).generation)
    ledger.rename_provider(other, "compute-1", ledger.provider(other).generation)
    ledger.delete_provider(other, ledger.provider(other).generation)
    assert ledger.register_provider(new_id(), "compute-1").name == "compute-1"


def test_a_rename_checks_the_generation_and_keeps_the_rest(ledger: Ledger) -> None:
    """A rename is one event: the generation stays (Placement's), inventory and tree
    stay."""
    host = a_host(ledger)
    before = ledger.provider(host)
    with pytest.raises(ProviderGenerationConflict):
        ledger.rename_provider(host, "renamed", before.generation - 1)
    with pytest.raises(InvalidRequest):
        ledger.rename_provider(host, before.name, before.generation)
    with pytest.raises(InvalidRequest):
        ledger.rename_provider(host, "", before.generation)
    assert ledger.provider(host) == before
    after = ledger.rename_provider(host, "renamed", before.generation)
    assert (after.name, after.generation) == ("renamed", before.generation)  # as Placement
    assert (after.inventories, after.root_uuid) == (before.inventories, before.root_uuid)


def test_delete_checks_the_provider_generation(ledger: Ledger) -> None:
    """A stale generation is a conflict carrying expected and actual."""
    host = a_host(ledger)
    with pytest.raises(ProviderGenerationConflict) as caught:
        ledger.delete_provider(host, 0)
    assert caught.value.fields == {"provider_uuid": host, "expected": 0, "actual": 1}


def test_a_deleted_provider_is_gone(ledger: Ledger) -> None:
    """Nothing can be claimed on it or changed; registering its UUID again is a new
    provider (see the test below); a live provider's UUID cannot be registered twice."""
    host = a_host(ledger)
    with pytest.raises(ProviderExists) as caught:
        ledger.register_provider(host, "again")
    assert caught.value.fields == {"provider_uuid": host}
    ledger.delete_provider(host, 1)
    with pytest.raises(ProviderNotFound):
        an_instance(ledger, {host: {"VCPU": 1}})
    with pytest.raises(ProviderNotFound):
        ledger.set_inventories(host, {"VCPU": {"total": 1}}, 2)


# -- trees ---------------------------------------------------------------------------------


def test_trees_of_depth_three(ledger: Ledger) -> None:
    """root -> NUMA node -> GPU: parents, roots, children, and usage across the tree."""
    root = a_host(ledger, vcpu=None, memory_mb=None, DISK_GB={"total": 100})
    numa = a_host(ledger, vcpu=8, memory_mb=4096, parent=root)
    gpu = a_host(ledger, vcpu=None, memory_mb=None, parent=numa, VGPU={"total": 4})
    other_numa = a_host(ledger, vcpu=8, memory_mb=4096, parent=root)
    tree = ledger.tree(root)
    assert set(tree) == {root, numa, gpu, other_numa}
    assert {v.root_uuid for v in tree.values()} == {root}
    assert (tree[numa].parent_uuid, tree[gpu].parent_uuid) == (root, numa)
    assert tree[root].children == tuple(sorted((numa, other_numa)))
    assert tree[numa].children == (gpu,)
    assert set(ledger.tree(numa)) == {numa, gpu}
    assert set(ledger.tree(gpu)) == {gpu}

    vm = an_instance(ledger, {root: {"DISK_GB": 20}, numa: {"VCPU": 2, "MEMORY_MB": 1024},
                              gpu: {"VGPU": 1}})
    an_instance(ledger, {other_numa: {"VCPU": 8}, gpu: {"VGPU": 3}})
    assert ledger.usages_in_tree(root) == {
        root: {"DISK_GB": 20},
        numa: {"VCPU": 2, "MEMORY_MB": 1024},
        gpu: {"VGPU": 4},
        other_numa: {"VCPU": 8, "MEMORY_MB": 0},
    }
    assert_invariants(ledger)
    ledger.release(vm.consumer_uuid, vm.generation)
    assert ledger.usages_in_tree(numa) == {numa: {"VCPU": 0, "MEMORY_MB": 0}, gpu: {"VGPU": 3}}
    assert_invariants(ledger)


def test_registering_a_child_advances_only_its_parent(ledger: Ledger) -> None:
    """The parent records the child (ChildAttached, which Placement does not count in its
    generation); the root above it is untouched."""
    root = a_host(ledger)
    mid = a_host(ledger, parent=root)
    root_generation, mid_generation = ledger.provider(root).generation, 1
    leaf = a_host(ledger, vcpu=2, memory_mb=None, parent=mid)
    assert ledger.provider(mid).generation == mid_generation
    assert ledger.provider(mid).children == (leaf,)
    assert ledger.provider(root).generation == root_generation
    assert ledger.provider(leaf).root_uuid == root
    assert claim(ledger, new_id(), {leaf: {"VCPU": 2}}) == 1


def test_many_providers_are_read_at_once_as_each_is_read_alone(ledger: Ledger) -> None:
    """``providers_many`` answers what ``provider`` answers for each, with traits and
    aggregates, in the order asked; deleted and unknown providers are left out."""
    host, other, gone = new_id(), new_id(), new_id()
    view = ledger.register_provider(host, "compute-1",
                                    inventories={"VCPU": {"total": 8}})
    view = ledger.set_traits(host, ["HW_CPU_X86_AVX2"], view.generation)
    ledger.set_aggregates(host, [new_id()], view.generation)
    numa = new_id()
    ledger.register_provider(numa, "compute-1-numa0", parent_uuid=host)
    ledger.register_provider(other, "compute-2")
    ledger.delete_provider(gone, ledger.register_provider(gone, "compute-3").generation)
    claim(ledger, new_id(), {host: {"VCPU": 2}})

    found = ledger.providers_many([other, gone, host, numa, new_id()])

    assert list(found) == [other, host, numa]
    assert found == {u: ledger.provider(u) for u in (other, host, numa)}
    assert found[host].traits == ("HW_CPU_X86_AVX2",) and found[host].usages == {"VCPU": 2}
    assert ledger.providers_many([]) == {}
