"""Writes start from this process's cached providers; another process's writes must never
make them refuse wrongly or accept wrongly."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.domain.errors import (
    ConsumerGenerationConflict,
    InsufficientCapacity,
    InvalidAllocation,
    InvalidRequest,
)
from tests.builders import PROJECT, USER, a_host, an_instance, new_id, snapshot
from tests.invariants import assert_invariants


def test_capacity_freed_elsewhere_is_seen(durable_url: str) -> None:
    with open_ledger(durable_url) as here, open_ledger(durable_url) as there:
        host = a_host(here, vcpu=4)
        first = here.claim(new_id(), {host: {"VCPU": 4}}, None, project_id=PROJECT,
                           user_id=USER)
        there.release(first.consumer_uuid, first.generation)  # here's cache still says full
        view = here.claim(new_id(), {host: {"VCPU": 4}}, None, project_id=PROJECT,
                          user_id=USER)
        assert view.generation == 1
        assert here.provider(host).usages["VCPU"] == 4
        assert_invariants(here)


def test_capacity_taken_elsewhere_is_seen(durable_url: str) -> None:
    with open_ledger(durable_url) as here, open_ledger(durable_url) as there:
        host = a_host(here, vcpu=4)
        here.claim(new_id(), {host: {"VCPU": 1}}, None, project_id=PROJECT, user_id=USER)
        there.claim(new_id(), {host: {"VCPU": 3}}, None, project_id=PROJECT, user_id=USER)
        with pytest.raises(InsufficientCapacity) as refused:
            here.claim(new_id(), {host: {"VCPU": 1}}, None, project_id=PROJECT, user_id=USER)
        assert (refused.value.fields["used"], refused.value.fields["capacity"]) == (4, 4)
        assert_invariants(here)


def test_rules_changed_elsewhere_apply_to_a_write_that_does_not_change_usage(
    durable_url: str,
) -> None:
    """Re-claiming the same amount appends nothing to the provider, so the cached copy's
    inventory must be checked against the store before the write counts."""
    with open_ledger(durable_url) as here, open_ledger(durable_url) as there:
        host = a_host(here, vcpu=8)
        vm = here.claim(new_id(), {host: {"VCPU": 4}}, None, project_id=PROJECT, user_id=USER)
        generation = there.provider(host).generation
        there.set_inventory(host, "VCPU", {"total": 8, "max_unit": 2}, generation)
        with pytest.raises(InvalidAllocation, match="above max_unit 2"):
            here.claim(vm.consumer_uuid, {host: {"VCPU": 4}}, vm.generation,
                       project_id=PROJECT, user_id=USER)


# -- consumers the caller expects to be new (expected_generation=None) ----------------------

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


@pytest.mark.parametrize("wanted", [2, 8], ids=["fits", "would not fit beside itself"])
def test_a_consumer_holding_elsewhere_is_a_generation_conflict(durable_url: str,
                                                                wanted: int) -> None:
    """Taken as new, the claim of 8 on a host of 8 holding 4 would be refused for capacity:
    the refusal is checked against the store, which says the consumer exists."""
    with open_ledger(durable_url) as here, open_ledger(durable_url) as there:
        host = a_host(here, vcpu=8)
        vm = an_instance(there, {host: {"VCPU": 4}})
        before = snapshot(here)
        with pytest.raises(ConsumerGenerationConflict) as conflict:
            here.claim(vm.consumer_uuid, {host: {"VCPU": wanted}}, None, project_id=PROJECT,
                       user_id=USER)
        assert conflict.value.fields == {"consumer_uuid": vm.consumer_uuid, "expected": None,
                                         "actual": 1}
        assert snapshot(here) == before


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
