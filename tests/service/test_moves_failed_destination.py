"""A resize whose chosen destination fails (``prep_resize`` raised on that host): Nova
removes the server's share there (``PUT /allocations/{server}`` without it, ``{}`` when
nothing else is left) and reschedules to an alternate host, while the migration keeps
holding the source. Removing the destination share leaves the move open; only deleting the
server (a forced release) or releasing the migration ends it. Usage, generations and the
migration's context after every step, on every store.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from allocation_ledger import Ledger
from allocation_ledger.domain.errors import ConsumerGenerationConflict
from tests.builders import PROJECT, USER, new_id, snapshot
from tests.service.devicing import device_host
from tests.service.moving import (
    FLAVOR1,
    FLAVOR2,
    Scene,
    assert_refused,
    claim,
    fields,
    flat_hosts,
    spawn,
)

Remove = Callable[[Ledger, str, int], object]


def _empty_write(ledger: Ledger, vm: str, generation: int) -> object:
    return ledger.write_allocations([{"consumer_uuid": vm, "allocations": {},
                                      "expected_generation": generation,
                                      "project_id": PROJECT, "user_id": USER}])


def _release(ledger: Ledger, vm: str, generation: int) -> object:
    assert ledger.release(vm, generation) is True
    return None


REMOVALS = [pytest.param(_empty_write, id="empty-write"), pytest.param(_release, id="release")]


def _first_destination_failed(ledger: Ledger, remove: Remove) -> tuple[Scene, list[str],
                                                                       str, str]:
    """Boot on host1, swap, claim host2, then give host2 up: the move stays open."""
    hosts = flat_hosts(ledger, 3)
    host1, host2, _ = hosts
    scene = Scene(ledger, hosts)
    vm, mig = new_id(), new_id()
    spawn(ledger, vm, {host1: FLAVOR1})
    ledger.swap(vm, mig, 1)
    claim(ledger, vm, {host2: FLAVOR2}, None)
    scene.expect({host1: FLAVOR1, host2: FLAVOR2},
                 {vm: ({host2: FLAVOR2}, 3), mig: ({host1: FLAVOR1}, 1)},
                 {mig: "in-progress"})
    before = len(snapshot(ledger))

    remove(ledger, vm, 3)
    scene.expect({host1: FLAVOR1}, {vm: ({}, None), mig: ({host1: FLAVOR1}, 1)},
                 {mig: "in-progress"})
    context = ledger.migration(mig)
    assert (context.destination_root, context.new_allocations, context.new_devices) == (
        None, {}, {})
    assert context.old_allocations == {host1: FLAVOR1}
    written = sorted(t.rsplit(":", 1)[1] for _, _, t, _ in snapshot(ledger)[before:])
    assert written == ["Command.Recorded", "Consumer.AllocationsReleased",
                       "Migration.DestinationRemoved", "Provider.AllocationsChanged"]
    return scene, hosts, vm, mig


@pytest.mark.parametrize("remove", REMOVALS)
def test_rescheduled_to_an_alternate_host_then_confirmed(ledger: Ledger,
                                                         remove: Remove) -> None:
    scene, (host1, _, host3), vm, mig = _first_destination_failed(ledger, remove)

    claim(ledger, vm, {host3: FLAVOR2}, None)
    scene.expect({host1: FLAVOR1, host3: FLAVOR2},
                 {vm: ({host3: FLAVOR2}, 5), mig: ({host1: FLAVOR1}, 1)},
                 {mig: "in-progress"})
    assert ledger.migration(mig).destination_root == host3

    ledger.confirm(mig, 1)
    scene.expect({host3: FLAVOR2}, {vm: ({host3: FLAVOR2}, 5), mig: ({}, None)},
                 {mig: "confirmed"})


@pytest.mark.parametrize("remove", REMOVALS)
def test_no_alternate_host_then_reverted(ledger: Ledger, remove: Remove) -> None:
    scene, (host1, _, _), vm, mig = _first_destination_failed(ledger, remove)

    ledger.revert(mig, 1, None)
    scene.expect({host1: FLAVOR1}, {vm: ({host1: FLAVOR1}, 5), mig: ({}, None)},
                 {mig: "reverted"})


def test_deleting_the_server_after_its_destination_failed_ends_the_move(
        ledger: Ledger) -> None:
    """A release of the emptied server is a no-op (nothing written, the move stays open);
    a stale number is a conflict; the forced release (the server's deletion) frees the
    source and aborts the migration."""
    scene, (host1, _, _), vm, mig = _first_destination_failed(ledger, _empty_write)
    open_move = ({host1: FLAVOR1}, {vm: ({}, None), mig: ({host1: FLAVOR1}, 1)},
                 {mig: "in-progress"})
    before = snapshot(ledger)
    assert ledger.release(vm, None) is False
    assert snapshot(ledger) == before
    err = assert_refused(ledger, ConsumerGenerationConflict, lambda: ledger.release(vm, 4))
    assert fields(err, "consumer_uuid", "expected", "actual") == (vm, 4, None)
    scene.expect(*open_move)

    assert ledger.force_release(vm) is True
    scene.expect({}, {vm: ({}, None), mig: ({}, None)}, {mig: "aborted"})


def test_releasing_the_migration_ends_the_move(ledger: Ledger) -> None:
    """An operator releasing the migration (generation 1, read after the swap) frees the
    source and aborts it; the server keeps its destination."""
    hosts = flat_hosts(ledger, 2)
    host1, host2 = hosts
    scene = Scene(ledger, hosts)
    vm, mig = new_id(), new_id()
    spawn(ledger, vm, {host1: FLAVOR1})
    ledger.swap(vm, mig, 1)
    claim(ledger, vm, {host2: FLAVOR2}, None)

    assert ledger.release(mig, 1) is True
    scene.expect({host2: FLAVOR2}, {vm: ({host2: FLAVOR2}, 3), mig: ({}, None)},
                 {mig: "aborted"})
    assert ledger.release(mig, None) is False


PMEM = "CUSTOM_PMEM_NAMESPACE_4GB"


def test_a_failed_same_host_destination_gives_its_devices_back(ledger: Ledger) -> None:
    """Same-host resize with vPMEM namespaces: removing the destination frees the new
    namespaces, the migration keeps the old one, and a new destination claim takes free
    namespaces again."""
    host = device_host(ledger, PMEM, ["ns0", "ns1", "ns2"])
    scene = Scene(ledger, [host])
    vm, mig = new_id(), new_id()
    spawn(ledger, vm, {host: {"VCPU": 1, PMEM: 1}})
    ledger.swap(vm, mig, 1)
    claim(ledger, vm, {host: {"VCPU": 1, PMEM: 2}}, None)
    assert ledger.provider(host).devices[PMEM] == {"ns0": mig, "ns1": vm, "ns2": vm}

    _empty_write(ledger, vm, 3)
    scene.expect({host: {"VCPU": 1, PMEM: 1}},
                 {vm: ({}, None), mig: ({host: {"VCPU": 1, PMEM: 1}}, 1)},
                 {mig: "in-progress"})
    assert ledger.provider(host).devices[PMEM] == {"ns0": mig, "ns1": None, "ns2": None}
    assert ledger.migration(mig).new_devices == {}

    claim(ledger, vm, {host: {"VCPU": 2, PMEM: 1}}, None)
    assert ledger.provider(host).devices[PMEM] == {"ns0": mig, "ns1": vm, "ns2": None}
    ledger.revert(mig, 1, 5)
    scene.expect({host: {"VCPU": 1, PMEM: 1}},
                 {vm: ({host: {"VCPU": 1, PMEM: 1}}, 6), mig: ({}, None)},
                 {mig: "reverted"})
    assert ledger.provider(host).devices[PMEM] == {"ns0": vm, "ns1": None, "ns2": None}
