"""Resizes and cold migrations, step by step (Nova's ``ServerMovingTests``).

A move swaps the server's allocation to a new migration consumer, then the server claims its
destination with ``expected_generation=None``; confirm drops the migration's (source) share,
revert gives it back. Generations: the server's first claim leaves 1, the swap 2 (empty:
reads ``None``), the destination claim 3, a revert 4; the migration is 1 when it takes the
source and stays 1 when the destination is recorded (that claim names only the server).
After every step the scene checks usage of
every provider, each consumer's allocations and generation, the migration's status and the
ledger's invariants.
"""

from __future__ import annotations

import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.domain.errors import InsufficientCapacity
from tests.builders import new_id, snapshot
from tests.service.moving import (
    FLAVOR1,
    FLAVOR2,
    FLAVOR3,
    Scene,
    assert_refused,
    claim,
    fields,
    flat_hosts,
    moved_to_other_host,
    numa_host,
    spawn,
)

MOVES = [
    pytest.param("resize", FLAVOR1, FLAVOR2, id="resize"),
    pytest.param("migration", FLAVOR1, FLAVOR1, id="cold-migration"),
]


@pytest.mark.parametrize(("kind", "old", "new"), MOVES)
def test_move_to_another_host_then_confirm(
    ledger: Ledger, kind: str, old: dict[str, int], new: dict[str, int]
) -> None:
    """After confirming, the server holds only the destination; the source is free."""
    m = moved_to_other_host(ledger, kind, old, new)

    ledger.confirm(m.mig, 1)
    m.scene.expect({m.host2: new}, {m.vm: ({m.host2: new}, 3), m.mig: ({}, None)},
                   {m.mig: "confirmed"})

    ledger.release(m.vm, 3)
    m.scene.expect({}, {m.vm: ({}, None), m.mig: ({}, None)}, {m.mig: "confirmed"})


@pytest.mark.parametrize(("kind", "old", "new"), MOVES)
def test_move_to_another_host_then_revert(
    ledger: Ledger, kind: str, old: dict[str, int], new: dict[str, int]
) -> None:
    """After reverting, the server holds only its source again; the destination is free."""
    m = moved_to_other_host(ledger, kind, old, new)

    ledger.revert(m.mig, 1, 3)
    m.scene.expect({m.host1: old}, {m.vm: ({m.host1: old}, 4), m.mig: ({}, None)},
                   {m.mig: "reverted"})

    ledger.release(m.vm, 4)
    m.scene.expect({}, {m.vm: ({}, None), m.mig: ({}, None)}, {m.mig: "reverted"})


def _resized_on_same_host(ledger: Ledger) -> tuple[Scene, str, str, str]:
    """Boot with flavor2, resize to flavor3 on the same host: it carries both."""
    (host,) = flat_hosts(ledger, 1)
    scene = Scene(ledger, [host])
    vm, mig = new_id(), new_id()
    spawn(ledger, vm, {host: FLAVOR2})
    scene.expect({host: FLAVOR2}, {vm: ({host: FLAVOR2}, 1)})

    ledger.swap(vm, mig, 1)
    scene.expect({host: FLAVOR2}, {vm: ({}, None), mig: ({host: FLAVOR2}, 1)},
                 {mig: "in-progress"})

    claim(ledger, vm, {host: FLAVOR3}, None)
    both = {rc: FLAVOR2[rc] + FLAVOR3[rc] for rc in FLAVOR2}
    scene.expect({host: both}, {vm: ({host: FLAVOR3}, 3), mig: ({host: FLAVOR2}, 1)},
                 {mig: "in-progress"})
    assert ledger.migration(mig).destination_root == host
    return scene, host, vm, mig


def test_same_host_resize_then_confirm(ledger: Ledger) -> None:
    """Confirming leaves only the new flavor's usage on the host."""
    scene, host, vm, mig = _resized_on_same_host(ledger)
    ledger.confirm(mig, 1)
    scene.expect({host: FLAVOR3}, {vm: ({host: FLAVOR3}, 3), mig: ({}, None)},
                 {mig: "confirmed"})


def test_same_host_resize_then_revert(ledger: Ledger) -> None:
    """Reverting leaves only the old flavor's usage on the host."""
    scene, host, vm, mig = _resized_on_same_host(ledger)
    ledger.revert(mig, 1, 3)
    scene.expect({host: FLAVOR2}, {vm: ({host: FLAVOR2}, 4), mig: ({}, None)},
                 {mig: "reverted"})


def test_same_host_resize_that_does_not_fit_both_is_refused(ledger: Ledger) -> None:
    """The host must carry old plus new until confirm: 2 + 1 VCPU on a 2-VCPU host is
    refused, as one combined swap (nothing written) or at the destination claim (the swap
    stays, and reverting it with no destination restores the start)."""
    (host,) = flat_hosts(ledger, 1, vcpu=2)
    scene = Scene(ledger, [host])
    vm, mig = new_id(), new_id()
    spawn(ledger, vm, {host: FLAVOR2})
    start = ({host: FLAVOR2}, {vm: ({host: FLAVOR2}, 1)})
    scene.expect(*start)

    err = assert_refused(ledger, InsufficientCapacity,
                         lambda: ledger.swap(vm, mig, 1, destination={host: FLAVOR3}))
    assert (err.fields["provider_uuid"], err.fields["resource_class"]) == (host, "VCPU")
    assert fields(err, "requested", "used", "capacity", "free") == (1, 2, 2, 0)
    scene.expect(*start)

    ledger.swap(vm, mig, 1)
    swapped = ({host: FLAVOR2}, {vm: ({}, None), mig: ({host: FLAVOR2}, 1)}, {mig: "in-progress"})
    scene.expect(*swapped)
    err = assert_refused(ledger, InsufficientCapacity,
                         lambda: claim(ledger, vm, {host: FLAVOR3}, None))
    assert (err.fields["provider_uuid"], err.fields["resource_class"]) == (host, "VCPU")
    scene.expect(*swapped)

    ledger.revert(mig, 1, None)
    scene.expect({host: FLAVOR2}, {vm: ({host: FLAVOR2}, 3), mig: ({}, None)},
                 {mig: "reverted"})


@pytest.mark.parametrize("kind", ["resize", "migration"])
def test_move_that_finds_no_destination_rolls_back(ledger: Ledger, kind: str) -> None:
    """NoValidHost after the swap: revert with no instance generation restores the start
    (Nova's ``test_resize_not_enough_resource``)."""
    host1, host2 = flat_hosts(ledger)
    scene = Scene(ledger, [host1, host2])
    vm, mig = new_id(), new_id()
    spawn(ledger, vm, {host1: FLAVOR1})
    scene.expect({host1: FLAVOR1}, {vm: ({host1: FLAVOR1}, 1)})

    ledger.swap(vm, mig, 1, kind=kind)
    scene.expect({host1: FLAVOR1}, {vm: ({}, None), mig: ({host1: FLAVOR1}, 1)},
                 {mig: "in-progress"})

    ledger.revert(mig, 1, None)
    scene.expect({host1: FLAVOR1}, {vm: ({host1: FLAVOR1}, 3), mig: ({}, None)},
                 {mig: "reverted"})


def test_delete_while_resize_waits_for_confirmation(ledger: Ledger) -> None:
    """Deleting the server in VERIFY_RESIZE (a forced release) frees source and destination
    in one write and aborts the migration (Nova's ``test_resize_delete_while_verify``)."""
    m = moved_to_other_host(ledger, "resize", FLAVOR1, FLAVOR2)
    before = len(snapshot(ledger))

    assert ledger.force_release(m.vm) is True
    m.scene.expect({}, {m.vm: ({}, None), m.mig: ({}, None)}, {m.mig: "aborted"})
    written = sorted(topic.rsplit(":", 1)[1] for _, _, topic, _ in snapshot(ledger)[before:])
    assert written == ["Command.Recorded", "Consumer.AllocationsReleased", "Migration.Aborted",
                       "Provider.AllocationsChanged", "Provider.AllocationsChanged"]


def test_cold_migration_of_a_nested_allocation_to_a_nested_host(ledger: Ledger) -> None:
    """A scheduled move handles nested allocations: the destination claim names the new
    tree's providers (Nova's nested ``ServerMovingTests`` variants)."""
    source, target = numa_host(ledger), numa_host(ledger)
    scene = Scene(ledger, source.providers + target.providers)
    vm, mig = new_id(), new_id()
    old, new = source.allocation(), target.allocation()
    spawn(ledger, vm, old)
    scene.expect(old, {vm: (old, 1)})

    started = ledger.swap(vm, mig, 1, kind="migration")
    assert started.source_root == source.root
    scene.expect(old, {vm: ({}, None), mig: (old, 1)}, {mig: "in-progress"})

    claim(ledger, vm, new, None)
    assert ledger.migration(mig).destination_root == target.root
    scene.expect({**old, **new}, {vm: (new, 3), mig: (old, 1)}, {mig: "in-progress"})

    ledger.confirm(mig, 1)
    scene.expect(new, {vm: (new, 3), mig: ({}, None)}, {mig: "confirmed"})


def test_operator_cleans_up_a_leaked_migration(ledger: Ledger) -> None:
    """A migration left holding the source (a lost confirm) is force-released: the source
    is freed, the migration aborted, the server keeps its destination."""
    m = moved_to_other_host(ledger)
    assert ledger.force_release(m.mig) is True
    m.scene.expect({m.host2: FLAVOR2}, {m.vm: ({m.host2: FLAVOR2}, 3), m.mig: ({}, None)},
                   {m.mig: "aborted"})


def test_revert_after_the_source_inventory_was_tightened(ledger: Ledger) -> None:
    """Mid-move the operator lowers the source's VCPU total below what the migration holds
    and caps ``max_unit`` under the flavor: the revert hands the existing records back
    without re-checking them, so the server is not stranded (docs/guarantees.md §2)."""
    m = moved_to_other_host(ledger, old=FLAVOR2, new=FLAVOR1)
    host1 = m.host1
    inventory = {rc: {"total": inv.total} for rc, inv in ledger.provider(host1).inventories.items()}
    inventory["VCPU"] = {"total": 1, "max_unit": 1}
    ledger.set_inventories(host1, inventory, ledger.provider(host1).generation)
    assert ledger.provider(host1).classes["VCPU"].over_capacity
    waiting = ({host1: FLAVOR2, m.host2: FLAVOR1},
               {m.vm: ({m.host2: FLAVOR1}, 3), m.mig: ({host1: FLAVOR2}, 1)},
               {m.mig: "in-progress"})
    m.scene.expect(*waiting)

    ledger.revert(m.mig, 1, 3)
    m.scene.expect({host1: FLAVOR2}, {m.vm: ({host1: FLAVOR2}, 4), m.mig: ({}, None)},
                   {m.mig: "reverted"})
    assert ledger.provider(host1).classes["VCPU"].over_capacity


PMEM = "CUSTOM_PMEM_NAMESPACE_4GB"


@pytest.mark.parametrize("resolve", ["confirm", "revert"])
def test_same_host_resize_keeps_both_device_sets_across_a_restart(url: str,
                                                                  resolve: str) -> None:
    """vPMEM namespaces on a same-host resize (``device-assignment-persistence.txt``): the
    migration keeps the old namespaces, the server takes new ones, a restart (reopening a
    durable store) loses neither, and confirm or revert frees the right set."""
    ledger = open_ledger(url)
    try:
        (host,) = flat_hosts(ledger, 1)
        ledger.set_devices(host, PMEM, ["ns0", "ns1", "ns2"], ledger.provider(host).generation)
        scene = Scene(ledger, [host])
        vm, mig = new_id(), new_id()
        old, new = {**FLAVOR1, PMEM: 1}, {**FLAVOR1, PMEM: 2}
        spawn(ledger, vm, {host: old})
        scene.expect({host: old}, {vm: ({host: old}, 1)})
        ledger.swap(vm, mig, 1)
        scene.expect({host: old}, {vm: ({}, None), mig: ({host: old}, 1)}, {mig: "in-progress"})
        claim(ledger, vm, {host: new}, None)
        if not url.startswith("memory"):
            ledger.close()
            ledger = scene.ledger = open_ledger(url)

        both = {rc: old[rc] + new[rc] for rc in old}
        scene.expect({host: both}, {vm: ({host: new}, 3), mig: ({host: old}, 1)},
                     {mig: "in-progress"})
        assert ledger.provider(host).devices[PMEM] == {"ns0": mig, "ns1": vm, "ns2": vm}
        context = ledger.migration(mig)
        assert context.old_devices == {host: {PMEM: ["ns0"]}}
        assert context.new_devices == {host: {PMEM: ["ns1", "ns2"]}}

        if resolve == "confirm":
            ledger.confirm(mig, 1)
            kept, generation, status = new, 3, "confirmed"
            holders = {"ns0": None, "ns1": vm, "ns2": vm}
        else:
            ledger.revert(mig, 1, 3)
            kept, generation, status = old, 4, "reverted"
            holders = {"ns0": vm, "ns1": None, "ns2": None}
        scene.expect({host: kept}, {vm: ({host: kept}, generation), mig: ({}, None)},
                     {mig: status})
        assert ledger.provider(host).devices[PMEM] == holders
        assert ledger.consumer(vm).devices == {
            host: {PMEM: sorted(d for d, h in holders.items() if h == vm)}}
    finally:
        ledger.close()
