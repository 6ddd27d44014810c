"""Allocation candidates from the ledger: the in-memory providers a ledger keeps up with its
store answer exactly what a fresh load of every provider answers, after every kind of write,
and see the writes of another ledger (another process) on the same store."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from allocation_ledger import Ledger, LedgerError, open_ledger
from allocation_ledger.application import catalog
from allocation_ledger.application.candidates import snapshot
from allocation_ledger.domain.candidates import search
from allocation_ledger.domain.candidates_request import (
    Candidates,
    CandidatesRequest,
    RequestGroup,
)
from allocation_ledger.domain.ids import provider_stream_id
from allocation_ledger.domain.provider import Provider
from allocation_ledger.domain.values import is_valid_resource_class
from tests.builders import PROJECT, USER, a_host, new_id

REQUESTS = [
    CandidatesRequest((RequestGroup(resources={"VCPU": 2, "MEMORY_MB": 1024}),)),
    CandidatesRequest((RequestGroup(resources={"VCPU": 1}),
                       RequestGroup("1", resources={"DISK_GB": 10})), group_policy="none"),
    CandidatesRequest((RequestGroup(resources={"VCPU": 1}),), nested_aware=False),
]


def answers(ledger: Ledger) -> list[Candidates]:
    return [ledger.allocation_candidates(r) for r in REQUESTS]


def fresh(ledger: Ledger) -> list[Candidates]:
    """The answers of the plain search over every live provider, all loaded now."""
    loaded = ledger.store.get_many(provider_stream_id(u) for u in catalog.providers(ledger.store))
    live = [snapshot(p) for p in loaded.values() if isinstance(p, Provider) and not p.deleted]
    return [search(live, r, class_exists=is_valid_resource_class,
                   trait_exists=ledger.trait_exists) for r in REQUESTS]


def test_kept_providers_answer_as_a_fresh_load_after_every_write(ledger: Ledger) -> None:
    steps: list[Callable[[], object]] = []
    host = new_id()
    numa = new_id()
    vm = new_id()
    steps.append(lambda: ledger.register_provider(host, "host", inventories={
        "DISK_GB": {"total": 100}}))
    steps.append(lambda: ledger.register_provider(numa, "numa", parent_uuid=host, inventories={
        "VCPU": {"total": 4}, "MEMORY_MB": {"total": 2048}}))
    other = a_host(ledger, vcpu=8, memory_mb=4096, disk_gb=50, name="other")
    steps.append(lambda: ledger.claim(vm, {numa: {"VCPU": 3, "MEMORY_MB": 1024}}, None,
                                      project_id=PROJECT, user_id=USER))
    steps.append(lambda: ledger.set_inventories(
        other, {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 512}},
        ledger.provider(other).generation))
    steps.append(lambda: ledger.release(vm, ledger.consumer(vm).generation or 0))
    steps.append(lambda: ledger.delete_provider(other, ledger.provider(other).generation))
    assert answers(ledger) == fresh(ledger)  # the first answer loads every provider
    for step in steps:
        step()
        assert answers(ledger) == fresh(ledger), step
    assert [len(a.allocation_requests) for a in answers(ledger)] == [1, 1, 1]


def test_another_ledger_on_the_store_sees_every_write(durable_url: str) -> None:
    with open_ledger(durable_url) as writer, open_ledger(durable_url) as reader:
        first = a_host(writer, vcpu=4, memory_mb=2048, disk_gb=100)
        assert [len(a.allocation_requests) for a in answers(reader)] == [1, 1, 1]
        a_host(writer, vcpu=4, memory_mb=2048, disk_gb=100)
        assert [len(a.allocation_requests) for a in answers(reader)] == [2, 2, 2]
        writer.claim(new_id(), {first: {"VCPU": 4}}, None, project_id=PROJECT, user_id=USER)
        assert answers(reader) == fresh(writer)
        assert [len(a.allocation_requests) for a in answers(reader)] == [1, 1, 1]


def test_candidates_follow_traits_and_aggregates_written_through_the_ledger(
        ledger: Ledger) -> None:
    """A trait or aggregate set on a provider is seen by the next request (an event on the
    provider's stream), and an unknown trait is refused as Placement refuses it."""
    fast, slow = a_host(ledger, vcpu=8), a_host(ledger, vcpu=8)
    agg = new_id()
    ledger.set_traits(fast, ["HW_CPU_X86_AVX2"], ledger.provider(fast).generation)
    ledger.set_aggregates(slow, [agg], ledger.provider(slow).generation)
    avx = CandidatesRequest((RequestGroup(resources={"VCPU": 1},
                                          required=(frozenset({"HW_CPU_X86_AVX2"}),)),))
    member = CandidatesRequest((RequestGroup(resources={"VCPU": 1},
                                             member_of=(frozenset({agg}),)),))
    def hosts(request: CandidatesRequest) -> list[list[str]]:
        found = ledger.allocation_candidates(request).allocation_requests
        return [list(c.allocations) for c in found]

    assert hosts(avx) == [[fast]]
    assert hosts(member) == [[slow]]
    unknown = CandidatesRequest((RequestGroup(resources={"VCPU": 1},
                                              required=(frozenset({"CUSTOM_NOPE"}),)),))
    with pytest.raises(LedgerError, match="CUSTOM_NOPE"):
        ledger.allocation_candidates(unknown)
