"""Consumers taken as new without a read (expected_generation=None, a move's migration UUID),
against a store another ledger wrote: every wrong guess ends as a fresh read would."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.domain.errors import ConsumerGenerationConflict, InvalidRequest
from tests.builders import PROJECT, USER, a_host, an_instance, new_id, snapshot
from tests.invariants import assert_invariants


def _w(uuid: str, allocs: dict[str, dict[str, int]], gen: int | None) -> dict[str, Any]:
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


@pytest.mark.parametrize("write", [
    pytest.param(lambda ledger, vm, host: ledger.claim(
        vm, {host: {"VCPU": 2}}, None, project_id=PROJECT, user_id=USER), id="a claim that fits"),
    pytest.param(lambda ledger, vm, host: ledger.claim(
        vm, {host: {"VCPU": 8}}, None, project_id=PROJECT, user_id=USER),
        id="a claim that would not fit beside itself"),
    pytest.param(lambda ledger, vm, host: ledger.write_allocations([_w(vm, {}, None)]),
                 id="a release-type write"),
])
def test_a_consumer_holding_elsewhere_is_a_generation_conflict(
        durable_url: str, write: Callable[[Ledger, str, str], object]) -> None:
    """Taken as new, the claim of 8 on a host of 8 holding 4 would be refused for capacity:
    that refusal is checked against the store, which says the consumer exists."""
    with open_ledger(durable_url) as here, open_ledger(durable_url) as there:
        host = a_host(here, vcpu=8)
        vm = an_instance(there, {host: {"VCPU": 4}})
        before = snapshot(here)
        with pytest.raises(ConsumerGenerationConflict) as conflict:
            write(here, vm.consumer_uuid, host)
        assert conflict.value.fields == {"consumer_uuid": vm.consumer_uuid, "expected": None,
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
            # taken as new, the migration is a generation conflict (Placement's 409), as a
            # fresh read would show it (it is a migration: only its move changes it)
            with pytest.raises(ConsumerGenerationConflict) as conflict:
                here.write_allocations(items)
            assert conflict.value.fields == {"consumer_uuid": mig, "expected": None,
                                             "actual": 1}
        with pytest.raises(InvalidRequest, match="migration consumers"):  # at its generation
            here.write_allocations([_w(mig, {d: {"VCPU": 1}}, 1)])
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


@contextmanager
def counting_reads(ledger: Ledger) -> Iterator[list[str]]:
    """Names of the recorder's stream reads while inside (the real recorder, spied on)."""
    recorder, calls = ledger.store.recorder, []
    real = recorder.select_events

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(str(args[0]))
        return real(*args, **kwargs)

    recorder.select_events = spy  # type: ignore[method-assign]
    try:
        yield calls
    finally:
        del recorder.select_events


def test_a_new_instance_claim_reads_nothing_before_its_append(durable_url: str) -> None:
    with open_ledger(durable_url) as ledger:
        host = a_host(ledger, vcpu=8)
        an_instance(ledger, {host: {"VCPU": 1}})  # the host is now in this process's cache
        with counting_reads(ledger) as reads:
            view = an_instance(ledger, {host: {"VCPU": 2}})
        assert reads == []
        assert (view.generation, ledger.provider(host).usages["VCPU"]) == (1, 3)


def test_an_emptied_consumer_written_elsewhere_is_claimed_at_its_next_generation(
        durable_url: str) -> None:
    with open_ledger(durable_url) as here, open_ledger(durable_url) as there:
        host = a_host(here, vcpu=8)
        vm = an_instance(there, {host: {"VCPU": 2}})
        there.release(vm.consumer_uuid, vm.generation)  # generation 2, holding nothing
        view = here.claim(vm.consumer_uuid, {host: {"VCPU": 3}}, None, project_id=PROJECT,
                          user_id=USER)
        assert view.generation == 3
        assert here.provider(host).usages["VCPU"] == 3
        assert_invariants(here)


def test_a_migration_uuid_taken_elsewhere_is_refused(durable_url: str) -> None:
    with open_ledger(durable_url) as here, open_ledger(durable_url) as there:
        source, destination = a_host(here, vcpu=8), a_host(here, vcpu=8)
        vm = an_instance(here, {source: {"VCPU": 2}})
        other = an_instance(there, {source: {"VCPU": 1}})
        taken = new_id()
        there.swap(other.consumer_uuid, taken, other.generation or 0)
        before = snapshot(here)
        with pytest.raises(InvalidRequest, match="already exists"):
            here.swap(vm.consumer_uuid, taken, vm.generation or 0,
                      destination={destination: {"VCPU": 2}})
        assert snapshot(here) == before
