"""The provider-list filter rules (``domain/provider_filters.py``) as tables: which providers
each filter keeps, and how filters combine (all must hold)."""

from __future__ import annotations

import pytest

from allocation_ledger.domain.provider_filters import (
    ProviderFacts,
    ProviderFilter,
    Room,
    select_providers,
)
from allocation_ledger.domain.values import Inventory

AVX, SSE, GOLD = "HW_CPU_X86_AVX2", "HW_CPU_X86_SSE", "CUSTOM_GOLD"
AGG1, AGG2, AGG3 = "agg-1", "agg-2", "agg-3"

WORLD = [
    ProviderFacts("host-a", "host-a", frozenset({AVX, GOLD}), frozenset({AGG1, AGG2}),
                  {"VCPU": Room(Inventory(8), 6)}),
    ProviderFacts("numa-a", "host-a", frozenset({SSE}), frozenset(),
                  {"VGPU": Room(Inventory(8, min_unit=2, max_unit=4, step_size=2), 2)}),
    ProviderFacts("host-b", "host-b", frozenset({AVX}), frozenset({AGG2}),
                  {"VCPU": Room(Inventory(8, reserved=2, allocation_ratio=2.0), 0)}),
    ProviderFacts("host-c", "host-c", frozenset(), frozenset({AGG3}), {}),
]


def kept(**wanted: object) -> list[str]:
    return [p.uuid for p in select_providers(WORLD, ProviderFilter(**wanted))]  # type: ignore[arg-type]


@pytest.mark.parametrize(("wanted", "expected"), [
    ({}, ["host-a", "numa-a", "host-b", "host-c"]),
    # required: every group, a group being any-of
    ({"required": (frozenset({AVX}),)}, ["host-a", "host-b"]),
    ({"required": (frozenset({AVX}), frozenset({GOLD}))}, ["host-a"]),
    ({"required": (frozenset({GOLD, SSE}),)}, ["host-a", "numa-a"]),
    ({"required": (frozenset({"CUSTOM_NONE"}),)}, []),
    # forbidden: none of them
    ({"forbidden": frozenset({AVX})}, ["numa-a", "host-c"]),
    ({"forbidden": frozenset({GOLD, SSE})}, ["host-b", "host-c"]),
    ({"required": (frozenset({AVX}),), "forbidden": frozenset({GOLD})}, ["host-b"]),
    # member_of: every group, a group being any-of; the provider's own aggregates only
    ({"member_of": (frozenset({AGG2}),)}, ["host-a", "host-b"]),
    ({"member_of": (frozenset({AGG1, AGG3}),)}, ["host-a", "host-c"]),
    ({"member_of": (frozenset({AGG1}), frozenset({AGG2}))}, ["host-a"]),
    ({"not_member_of": frozenset({AGG2})}, ["numa-a", "host-c"]),
    ({"member_of": (frozenset({AGG2, AGG3}),), "not_member_of": frozenset({AGG1})},
     ["host-b", "host-c"]),
    # in_tree: the named provider's whole tree; an unknown one lists nothing
    ({"in_tree": "numa-a"}, ["host-a", "numa-a"]),
    ({"in_tree": "host-b"}, ["host-b"]),
    ({"in_tree": "nowhere"}, []),
    # resources: capacity left, and the unit rules of one allocation
    ({"resources": {"VCPU": 2}}, ["host-a", "host-b"]),
    ({"resources": {"VCPU": 3}}, ["host-b"]),  # host-a has 2 left
    ({"resources": {"VCPU": 12}}, ["host-b"]),  # (8 - 2) * 2.0
    ({"resources": {"VCPU": 13}}, []),
    ({"resources": {"VGPU": 4}}, ["numa-a"]),
    ({"resources": {"VGPU": 1}}, []),  # below min_unit
    ({"resources": {"VGPU": 3}}, []),  # not a multiple of step_size
    ({"resources": {"VGPU": 6}}, []),  # above max_unit, though 6 are free
    ({"resources": {"VCPU": 1, "VGPU": 2}}, []),  # no one provider has both
    # everything at once
    ({"in_tree": "host-a", "required": (frozenset({SSE, AVX}),),
      "resources": {"VGPU": 2}}, ["numa-a"]),
])
def test_filters(wanted: dict[str, object], expected: list[str]) -> None:
    assert kept(**wanted) == expected


def test_traits_named_are_every_required_and_forbidden_trait() -> None:
    wanted = ProviderFilter(required=(frozenset({AVX, SSE}), frozenset({GOLD})),
                            forbidden=frozenset({"CUSTOM_X"}))
    assert wanted.traits_named == {AVX, SSE, GOLD, "CUSTOM_X"}


@pytest.mark.parametrize(("room", "amount", "takes"), [
    (Room(Inventory(4), 0), 4, True),
    (Room(Inventory(4), 1), 4, False),
    (Room(Inventory(4, reserved=4), 0), 1, False),
    (Room(Inventory(3, allocation_ratio=1.5), 0), 4, True),  # floor(4.5)
    (Room(Inventory(3, allocation_ratio=1.5), 0), 5, False),
    (Room(Inventory(10, max_unit=3), 0), 3, True),
    (Room(Inventory(10, max_unit=3), 0), 4, False),
    (Room(Inventory(10, step_size=5), 0), 5, True),
    (Room(Inventory(10, step_size=5), 0), 7, False),
    (Room(Inventory(4), 6), 1, False),  # over capacity already
])
def test_room_takes_one_allocation(room: Room, amount: int, takes: bool) -> None:
    assert room.takes(amount) is takes
