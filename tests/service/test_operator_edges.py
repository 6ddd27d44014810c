"""Edges an operator meets: consumer identity on later writes, releasing an evacuation's
record, removing what is not there, and reads shared between threads."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.domain.errors import InvalidRequest, ResourceClassNotOnProvider
from tests.builders import a_host, an_instance, new_id, snapshot
from tests.invariants import assert_invariants


def test_a_later_write_updates_project_user_and_type(ledger: Ledger) -> None:
    """Placement updates a consumer's project and user (and type) on a write."""
    host = a_host(ledger)
    vm = an_instance(ledger, {host: {"VCPU": 1}})
    view = ledger.claim(vm.consumer_uuid, {host: {"VCPU": 2}}, vm.generation,
                        project_id="project-b", user_id="user-b", consumer_type="CUSTOM_JOB")
    assert (view.project_id, view.user_id, view.consumer_type, view.generation) == (
        "project-b", "user-b", "CUSTOM_JOB", 2)
    [again] = ledger.write_allocations([{
        "consumer_uuid": vm.consumer_uuid, "allocations": {host: {"VCPU": 1}},
        "expected_generation": 2, "project_id": "project-c", "user_id": "user-c"}])
    assert (again.project_id, again.user_id, again.consumer_type) == (
        "project-c", "user-c", "INSTANCE")
    assert_invariants(ledger)


def test_the_record_of_an_evacuation_in_flight_cannot_be_released(ledger: Ledger) -> None:
    """It holds nothing itself; releasing it would strand the instance holding two hosts."""
    source, destination = a_host(ledger), a_host(ledger)
    vm = an_instance(ledger, {source: {"VCPU": 2}})
    migration = new_id()
    ledger.evacuate(vm.consumer_uuid, migration, vm.generation or 0, destination_root=destination)
    before = snapshot(ledger)
    for release in (lambda: ledger.release(migration, None),
                    lambda: ledger.force_release(migration)):
        with pytest.raises(InvalidRequest, match="revert or complete it"):
            release()
    assert snapshot(ledger) == before
    ledger.complete_evacuation(migration, ledger.consumer(vm.consumer_uuid).generation or 0)
    assert ledger.consumer(vm.consumer_uuid).allocations == {destination: {"VCPU": 2}}
    assert_invariants(ledger)


def test_removing_what_is_not_there_is_refused_and_writes_nothing(ledger: Ledger) -> None:
    host = a_host(ledger)
    generation = ledger.provider(host).generation
    before = snapshot(ledger)
    with pytest.raises(ResourceClassNotOnProvider):
        ledger.delete_inventory(host, "DISK_GB", generation)
    with pytest.raises(InvalidRequest, match="no devices to remove"):
        ledger.set_devices(host, "MEMORY_MB", [], generation)
    assert snapshot(ledger) == before
    assert ledger.provider(host).inventories["MEMORY_MB"].total == 32768


@pytest.fixture
def tiny_switch_interval() -> Iterator[None]:
    """Switch threads as often as possible, to widen any window a race could use."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


@pytest.mark.usefixtures("tiny_switch_interval")
def test_threads_sharing_a_ledger_never_read_a_torn_provider() -> None:
    """A reader copying a cached provider while another thread fast-forwards it must not see
    devices from one version and usage from another."""
    with open_ledger("memory://") as ledger:
        host = a_host(ledger, vcpu=None, memory_mb=None)
        ledger.set_devices(host, "VGPU", [f"mdev-{i:02}" for i in range(16)],
                           ledger.provider(host).generation)
        vm = an_instance(ledger, {host: {"VGPU": 1}})
        stop = threading.Event()
        torn: list[str] = []

        def read() -> None:
            while not stop.is_set():
                view = ledger.provider(host)
                held = sum(1 for h in view.devices["VGPU"].values() if h)
                if held != view.usages["VGPU"]:
                    torn.append(f"generation {view.generation}: {held} held, "
                                f"usage {view.usages['VGPU']}")

        readers = [threading.Thread(target=read) for _ in range(3)]
        for r in readers:
            r.start()
        generation = vm.generation
        for i in range(400):
            generation = ledger.claim(vm.consumer_uuid, {host: {"VGPU": 1 + i % 15}}, generation,
                                      project_id="p", user_id="u").generation
        stop.set()
        for r in readers:
            r.join()
        assert torn == []
