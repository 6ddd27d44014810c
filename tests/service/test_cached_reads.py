"""Writes start from this process's cached providers; another process's writes must never
make them refuse wrongly or accept wrongly."""

from __future__ import annotations

from typing import Any

import pytest

from allocation_ledger import open_ledger
from allocation_ledger.application.policy import WritePolicy
from allocation_ledger.domain.errors import (
    InsufficientCapacity,
    InvalidAllocation,
)
from allocation_ledger.domain.ids import provider_stream_id
from tests.builders import PROJECT, USER, a_host, new_id
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


@pytest.mark.parametrize("cached_first", [True, False])
def test_the_ledgers_policy_decides_whether_a_first_attempt_reads_the_cache(
    durable_url: str, cached_first: bool,
) -> None:
    """The write policy chosen when the ledger is opened is the one the write path follows:
    with ``cached_first_attempt`` off, a claim on a host this process knows reads it fresh."""
    policy = WritePolicy(cached_first_attempt=cached_first)
    with open_ledger(durable_url, policy=policy) as here:
        host = a_host(here, vcpu=8)
        here.claim(new_id(), {host: {"VCPU": 1}}, None, project_id=PROJECT, user_id=USER)
        asked: list[bool] = []
        get = here.store.get

        def noting(stream_id: Any, **kwargs: Any) -> Any:
            if stream_id == provider_stream_id(host):
                asked.append(kwargs.get("cached", False))
            return get(stream_id, **kwargs)

        here.store.get = noting  # type: ignore[method-assign]
        here.claim(new_id(), {host: {"VCPU": 1}}, None, project_id=PROJECT, user_id=USER)
        assert here.policy is policy
        assert asked == [cached_first]  # the host, read once: cached or fresh as the policy says
        assert here.provider(host).usages["VCPU"] == 2
