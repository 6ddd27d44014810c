"""The candidates search's rules one at a time, on small clouds: capacity and unit rules,
spreading over a tree, traits and aggregates, group policies, the amounts of one class asked
by several groups, order and limit, and refusals."""

from __future__ import annotations

import pytest

from allocation_ledger.domain.candidates_request import NoSuchResourceClass, NoSuchTraits
from allocation_ledger.domain.values import Inventory
from tests.unit.candidates_clouds import SHARES, Cloud


@pytest.mark.parametrize(("inventory", "used", "amount", "fits"), [
    (Inventory(10), 9, 1, True),
    (Inventory(10), 9, 2, False),
    (Inventory(10, reserved=2), 7, 1, True),       # capacity 8
    (Inventory(10, reserved=2), 7, 2, False),
    (Inventory(10, allocation_ratio=1.5), 14, 1, True),  # capacity 15
    (Inventory(10, allocation_ratio=1.5), 14, 2, False),
    (Inventory(3, allocation_ratio=0.5), 0, 1, True),    # capacity int(1.5) = 1
    (Inventory(3, allocation_ratio=0.5), 0, 2, False),
    (Inventory(10, min_unit=2), 0, 1, False),
    (Inventory(10, max_unit=4), 0, 5, False),
    (Inventory(10, max_unit=4), 0, 4, True),
    (Inventory(10, step_size=2), 0, 3, False),
    (Inventory(10, step_size=2), 0, 4, True),
    (Inventory(10), 11, 1, False),  # already over capacity (inventory lowered)
])
def test_capacity_left_and_unit_rules(inventory: Inventory, used: int, amount: int,
                                      fits: bool) -> None:
    cloud = Cloud().add("host", VCPU=inventory, used={"VCPU": used})
    for query in (f"resources=VCPU:{amount}", f"resources1=VCPU:{amount}"):
        assert len(cloud.ask(query)) == (1 if fits else 0), query


def numa_host(name: str = "host", **root_traits: tuple[str, ...]) -> Cloud:
    """A compute node with disk, over two NUMA nodes with CPU and memory."""
    c = Cloud().add(name, DISK_GB=100, aggs=("agg_root",), traits=root_traits.get("t", ()))
    c.add(f"{name}_numa0", parent=name, VCPU=4, MEMORY_MB=1024, traits=("HW_NUMA_ROOT",))
    c.add(f"{name}_numa1", parent=name, VCPU=4, MEMORY_MB=1024,
          traits=("HW_NUMA_ROOT", "CUSTOM_SLOW"), aggs=("agg_child",))
    return c


def test_the_unnumbered_group_spreads_over_the_tree() -> None:
    answer = numa_host().ask("resources=VCPU:1,MEMORY_MB:512,DISK_GB:10")
    found = {_canon(c) for c in answer.candidates}
    expected = set()
    for cpu in ("host_numa0", "host_numa1"):
        for mem in ("host_numa0", "host_numa1"):
            c: dict[str, dict[str, int]] = {"host": {"DISK_GB": 10}}
            c.setdefault(cpu, {})["VCPU"] = 1
            c.setdefault(mem, {})["MEMORY_MB"] = 512
            expected.add(_canon(c))
    assert len(answer) == 4
    assert found == expected


def _canon(c: dict[str, dict[str, int]]) -> tuple[tuple[str, tuple[tuple[str, int], ...]], ...]:
    return tuple(sorted((p, tuple(sorted(r.items()))) for p, r in c.items()))


def test_a_granular_group_takes_from_one_provider() -> None:
    assert len(numa_host().ask("resources1=VCPU:1,DISK_GB:10")) == 0
    assert [c for c in numa_host().ask("resources1=VCPU:1,MEMORY_MB:512").candidates] == [
        {"host_numa0": {"VCPU": 1, "MEMORY_MB": 512}},
        {"host_numa1": {"VCPU": 1, "MEMORY_MB": 512}}]


def test_a_spread_group_needs_its_traits_on_the_providers_it_takes_from() -> None:
    # the root has the trait but gives only disk: CPU from a NUMA node does not carry it
    cloud = numa_host(t=("CUSTOM_ROOT",))
    assert len(cloud.ask("resources=VCPU:1&required=CUSTOM_ROOT")) == 0
    assert len(cloud.ask("resources=VCPU:1,DISK_GB:1&required=CUSTOM_ROOT")) == 2


@pytest.mark.parametrize(("query", "cpu_from"), [
    ("resources=VCPU:1&required=!CUSTOM_SLOW", ["host_numa0"]),
    ("resources=VCPU:1&required=CUSTOM_SLOW", ["host_numa1"]),
    ("resources=VCPU:1&required=in:CUSTOM_SLOW,CUSTOM_NONE", ["host_numa1"]),
    ("resources=VCPU:1&required=HW_NUMA_ROOT&required=!CUSTOM_SLOW", ["host_numa0"]),
    ("resources=VCPU:1&member_of=$agg_child", ["host_numa1"]),
    # an aggregate of the root spans the tree
    ("resources=VCPU:1&member_of=$agg_root", ["host_numa0", "host_numa1"]),
    ("resources=VCPU:1&member_of=!$agg_child", ["host_numa0"]),
    ("resources=VCPU:1&member_of=!$agg_root", []),
    ("resources=VCPU:1&member_of=in:$agg_child,$agg_none", ["host_numa1"]),
    ("resources1=VCPU:1&member_of1=$agg_root", []),  # a granular group: the provider itself
    ("resources1=VCPU:1&member_of1=$agg_child", ["host_numa1"]),
])
def test_traits_and_aggregates(query: str, cpu_from: list[str]) -> None:
    answer = numa_host().ask(query)
    assert sorted(p for c in answer.candidates for p in c) == cpu_from


def test_sharing_provider_serves_the_trees_of_its_aggregates() -> None:
    cloud = numa_host("a").add("nfs", DISK_GB=1000, aggs=("agg_root",), traits=(SHARES,))
    cloud.add("b", VCPU=8, aggs=("agg_other",))
    answer = cloud.ask("resources=VCPU:1,DISK_GB:50")
    disk_from = sorted(p for c in answer.candidates for p, r in c.items() if "DISK_GB" in r)
    assert disk_from == ["a", "a", "nfs", "nfs"]  # b is not in the share's aggregate
    assert "b" not in answer.summarised


def test_one_class_in_two_groups_adds_up_per_candidate() -> None:
    """Placement 16 piles such amounts up across candidates when group_policy is not
    ``none`` (see domain/candidates.py); the ledger adds each candidate's own."""
    cloud = Cloud()
    for host in ("h1", "h2", "h3"):
        cloud.add(host, VCPU=8, MEMORY_MB=4608)
    answer = cloud.ask("resources=MEMORY_MB:512&resources1=MEMORY_MB:4096")
    assert sorted(answer.candidates, key=_canon) == [
        {h: {"MEMORY_MB": 4608}} for h in ("h1", "h2", "h3")]
    assert len(cloud.ask("resources=MEMORY_MB:513&resources1=MEMORY_MB:4096")) == 0


def test_isolate_keeps_granular_groups_apart_but_not_from_the_unnumbered_one() -> None:
    cloud = Cloud().add("host")
    for n in (0, 1):
        cloud.add(f"numa{n}", parent="host", MEMORY_MB=8192)
    answer = cloud.ask("resources=MEMORY_MB:100&resources1=MEMORY_MB:512"
                       "&resources2=MEMORY_MB:4096&group_policy=isolate")
    assert len(answer) == 4
    for candidate, mapping in zip(answer.candidates, answer.mappings, strict=True):
        assert mapping["1"] != mapping["2"]
        assert sum(r["MEMORY_MB"] for r in candidate.values()) == 4708
    none = cloud.ask("resources=MEMORY_MB:100&resources1=MEMORY_MB:512"
                     "&resources2=MEMORY_MB:4096&group_policy=none")
    assert len(none) == 8


def test_order_is_stable_and_limit_keeps_the_first() -> None:
    cloud = Cloud()
    for host in ("h1", "h2", "h3", "h4"):
        cloud.add(host, VCPU=8)
    everything = cloud.ask("resources=VCPU:1")
    limited = cloud.ask("resources=VCPU:1&limit=2")
    assert limited.candidates == everything.candidates[:2]
    assert limited.summarised == [p for c in limited.candidates for p in c]
    assert cloud.ask("resources=VCPU:1").candidates == everything.candidates


def test_duplicate_candidates_are_answered_once() -> None:
    cloud = Cloud().add("nfs", DISK_GB=1000, aggs=("agg",), traits=(SHARES,))
    for host in ("h1", "h2"):
        cloud.add(host, VCPU=8, aggs=("agg",))
    answer = cloud.ask("resources=DISK_GB:10")
    assert answer.candidates == [{"nfs": {"DISK_GB": 10}}]
    assert answer.summarised == ["nfs"]


def test_unknown_names_are_refused_in_placements_order() -> None:
    cloud = numa_host()
    # (every well-formed CUSTOM_ class exists in the ledger: it keeps no registry of them)
    with pytest.raises(NoSuchResourceClass, match="No such resource class NOPE"):
        cloud.ask("resources=NOPE:1")
    with pytest.raises(NoSuchTraits, match=r"No such trait\(s\): CUSTOM_NOPE"):
        cloud.ask("resources=VCPU:1&required=CUSTOM_NOPE", traits={"HW_NUMA_ROOT"})
    # a group with no candidates ends the search before a later group's names are checked
    later = cloud.ask("resources1=VCPU:100&resources2=VCPU:1&required2=CUSTOM_NOPE"
                      "&group_policy=none", traits={"HW_NUMA_ROOT"})
    assert len(later) == 0
    # no provider in the member_of aggregates: no candidates, traits unchecked
    assert len(cloud.ask("resources=VCPU:1&member_of=$agg_none&required=CUSTOM_NOPE",
                         traits=set())) == 0


def test_in_tree_of_an_unknown_provider_finds_nothing() -> None:
    assert len(numa_host().ask("resources=VCPU:1&in_tree=$nobody")) == 0


def test_before_1_29_a_candidate_takes_one_provider_per_tree() -> None:
    cloud = numa_host()
    assert len(cloud.ask("resources=VCPU:1,DISK_GB:1", (1, 28))) == 0
    old = cloud.ask("resources=VCPU:1", (1, 28))
    assert len(old) == 2
    assert sorted(old.summarised) == ["host_numa0", "host_numa1"]
    assert len(cloud.ask("resources=VCPU:1", (1, 29)).summarised) == 3
