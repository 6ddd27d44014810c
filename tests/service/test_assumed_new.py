"""Consumers taken as new without a read (expected_generation=None, a move's migration UUID),
against a store another ledger wrote: every wrong guess ends as a fresh read would."""
from __future__ import annotations

import pytest

from allocation_ledger import open_ledger
from allocation_ledger.domain.errors import ConsumerGenerationConflict, InvalidRequest
from tests.builders import PROJECT, USER, a_host, an_instance, new_id, snapshot
from tests.invariants import assert_invariants


def _w(uuid, allocs, gen):
    return {"consumer_uuid": uuid, "allocations": allocs, "expected_generation": gen,
            "project_id": PROJECT, "user_id": USER}


def test_mixed_write_new_emptied_elsewhere_and_existing(durable_url: str) -> None:
    with open_ledger(durable_url) as here, open_ledger(durable_url) as there:
        host = a_host(here, vcpu=8)
        a = an_instance(there, {host: {"VCPU": 1}})
        there.release(a.consumer_uuid, a.generation)          # a: v2, holds nothing
        b = an_instance(here, {host: {"VCPU": 1}})
        views = here.write_allocations([_w(a.consumer_uuid, {host: {"VCPU": 2}}, None),
                                        _w(b.consumer_uuid, {host: {"VCPU": 3}}, b.generation),
                                        _w(new_id(), {host: {"VCPU": 1}}, None)])
        assert [v.generation for v in views] == [3, 2, 1]
        assert here.provider(host).usages["VCPU"] == 6
        assert_invariants(here)


def test_release_write_with_none_on_consumer_holding_elsewhere(durable_url: str) -> None:
    with open_ledger(durable_url) as here, open_ledger(durable_url) as there:
        host = a_host(here, vcpu=8)
        a = an_instance(there, {host: {"VCPU": 1}})
        before = snapshot(here)
        with pytest.raises(ConsumerGenerationConflict) as err:
            here.write_allocations([_w(a.consumer_uuid, {}, None)])
        assert err.value.fields == {"consumer_uuid": a.consumer_uuid, "expected": None,
                                    "actual": 1}
        assert snapshot(here) == before


def test_write_naming_a_migration_made_elsewhere(durable_url: str) -> None:
    with open_ledger(durable_url) as here, open_ledger(durable_url) as there:
        s, d = a_host(here, vcpu=8), a_host(here, vcpu=8)
        vm = an_instance(there, {s: {"VCPU": 2}})
        mig = new_id()
        there.swap(vm.consumer_uuid, mig, vm.generation)
        before = snapshot(here)
        for items in ([_w(mig, {d: {"VCPU": 1}}, None)],
                      [_w(vm.consumer_uuid, {d: {"VCPU": 2}}, None),
                       _w(mig, {d: {"VCPU": 1}}, None)],
                      [_w(mig, {d: {"VCPU": 1}}, None),
                       _w(vm.consumer_uuid, {d: {"VCPU": 2}}, None)]):
            with pytest.raises(InvalidRequest, match="migration consumers"):
                here.write_allocations(items)
        assert snapshot(here) == before
        # the instance's destination claim, taken as new, lands on its migration
        view = here.claim(vm.consumer_uuid, {d: {"VCPU": 2}}, None, project_id=PROJECT,
                          user_id=USER)
        assert view.migration_uuid == mig if hasattr(view, "migration_uuid") else True
        assert here.migration(mig).destination_root == d
        assert_invariants(here)


@pytest.mark.parametrize("move", ["evacuate", "force_live_migrate", "swap_self"])
def test_moves_with_taken_migration_uuid(durable_url: str, move: str) -> None:
    with open_ledger(durable_url) as here, open_ledger(durable_url) as there:
        s, d = a_host(here, vcpu=8), a_host(here, vcpu=8)
        vm = an_instance(here, {s: {"VCPU": 2}})
        taken = an_instance(there, {s: {"VCPU": 1}}).consumer_uuid   # a plain consumer
        before = snapshot(here)
        with pytest.raises(InvalidRequest, match="already exists"):
            if move == "evacuate":
                here.evacuate(vm.consumer_uuid, taken, vm.generation, destination_root=d)
            elif move == "force_live_migrate":
                here.force_live_migrate(vm.consumer_uuid, taken, d, vm.generation)
            else:
                here.swap(vm.consumer_uuid, vm.consumer_uuid, vm.generation)
        assert snapshot(here) == before
