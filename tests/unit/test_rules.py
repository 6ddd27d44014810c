"""Placement's capacity and unit rules, as tables over the pure functions of
``allocation_ledger.domain.rules`` (docs/guarantees.md §2). No store is involved."""

from __future__ import annotations

import math
from typing import Any

import pytest

from allocation_ledger.domain import rules
from allocation_ledger.domain.errors import (
    InsufficientCapacity,
    InvalidAllocation,
    InvalidInventory,
    InvalidRequest,
    LedgerError,
)
from allocation_ledger.domain.values import MAX_INT, Inventory

PROVIDER = "5a3ef1c2-0000-4000-8000-000000000001"
CONSUMER = "5a3ef1c2-0000-4000-8000-0000000000c1"


def inv(**fields: Any) -> Inventory:
    """An inventory from plain fields, as an event would carry them (no type coercion)."""
    return Inventory.from_dict(fields)


# -- capacity -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "capacity"),
    [
        pytest.param({"total": 16}, 16, id="defaults"),
        pytest.param({"total": 16, "reserved": 4}, 12, id="reserved"),
        pytest.param({"total": 4, "reserved": 4}, 0, id="reserved-equals-total"),
        pytest.param({"total": 3, "allocation_ratio": 1.5}, 4, id="3x1.5-floors-to-4"),
        pytest.param({"total": 16, "reserved": 4, "allocation_ratio": 0.5}, 6, id="ratio-below-1"),
        pytest.param({"total": 7, "allocation_ratio": 0.5}, 3, id="3.5-floors-to-3"),
        pytest.param({"total": 1, "allocation_ratio": 0.5}, 0, id="half-of-one-is-none"),
        pytest.param({"total": 8, "allocation_ratio": 16.0}, 128, id="overcommit-16"),
        pytest.param({"total": 1024, "reserved": 512, "allocation_ratio": 1.5}, 768, id="mem"),
        pytest.param({"total": 5, "allocation_ratio": 2}, 10, id="integer-ratio"),
        pytest.param({"total": MAX_INT}, MAX_INT, id="max-int"),
    ],
)
def test_capacity_is_total_minus_reserved_times_ratio_floored(
    fields: dict[str, Any], capacity: int
) -> None:
    """capacity = floor((total - reserved) * allocation_ratio), as Placement computes it."""
    assert inv(**fields).capacity == capacity


def test_inventory_defaults_are_placements() -> None:
    """Only ``total`` is required; the rest default as in Placement."""
    assert inv(total=8).to_dict() == {
        "total": 8,
        "reserved": 0,
        "min_unit": 1,
        "max_unit": 2147483647,
        "step_size": 1,
        "allocation_ratio": 1.0,
    }
    assert Inventory.from_dict(inv(total=8, reserved=2).to_dict()) == inv(total=8, reserved=2)


# -- inventory validation ------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"total": 1}, id="total-1"),
        pytest.param({"total": 4, "reserved": 4}, id="reserved-equals-total"),
        pytest.param({"total": MAX_INT, "reserved": MAX_INT}, id="max-int-everywhere"),
        pytest.param({"total": 8, "min_unit": 8, "max_unit": 8}, id="min-equals-max"),
        pytest.param({"total": 8, "step_size": MAX_INT, "max_unit": MAX_INT}, id="big-step"),
        pytest.param({"total": 8, "allocation_ratio": 0.0001}, id="tiny-ratio"),
        pytest.param({"total": 8, "allocation_ratio": 3}, id="integer-ratio"),
    ],
)
def test_valid_inventories_have_no_problem(fields: dict[str, Any]) -> None:
    """Boundary values that Placement accepts."""
    assert rules.inventory_problem(inv(**fields)) is None
    rules.validate_inventory(PROVIDER, "VCPU", inv(**fields))


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        pytest.param({"total": 0}, "total must be at least 1", id="total-0"),
        pytest.param({"total": -3}, "total must be at least 1", id="total-negative"),
        pytest.param({"total": 4, "reserved": -1}, "reserved must not be negative",
                     id="reserved-negative"),
        pytest.param({"total": 4, "reserved": 5}, "reserved 5 exceeds total 4",
                     id="reserved-above-total"),
        pytest.param({"total": 4, "min_unit": 0}, "min_unit must be at least 1", id="min-0"),
        pytest.param({"total": 4, "max_unit": 0}, "max_unit must be at least 1", id="max-0"),
        pytest.param({"total": 4, "step_size": 0}, "step_size must be at least 1", id="step-0"),
        pytest.param({"total": 4, "allocation_ratio": 0.0}, "allocation_ratio", id="ratio-0"),
        pytest.param({"total": 4, "allocation_ratio": -1.5}, "allocation_ratio",
                     id="ratio-negative"),
        pytest.param({"total": 4, "allocation_ratio": math.nan}, "allocation_ratio",
                     id="ratio-nan"),
        pytest.param({"total": 4, "allocation_ratio": True}, "allocation_ratio",
                     id="ratio-bool"),
        pytest.param({"total": 4, "allocation_ratio": "1.5"}, "allocation_ratio",
                     id="ratio-string"),
        pytest.param({"total": MAX_INT + 1}, f"total {MAX_INT + 1} exceeds {MAX_INT}",
                     id="total-above-max-int"),
        pytest.param({"total": 4, "reserved": MAX_INT + 1}, "reserved", id="reserved-huge"),
        pytest.param({"total": 4, "min_unit": MAX_INT + 1}, "min_unit", id="min-huge"),
        pytest.param({"total": 4, "max_unit": MAX_INT + 1}, "max_unit", id="max-huge"),
        pytest.param({"total": 4, "step_size": MAX_INT + 1}, "step_size", id="step-huge"),
        pytest.param({"total": 4.0}, "total must be an integer", id="total-float"),
        pytest.param({"total": True}, "total must be an integer", id="total-bool"),
        pytest.param({"total": "4"}, "total must be an integer", id="total-string"),
        pytest.param({"total": 4, "step_size": 1.0}, "step_size must be an integer",
                     id="step-float"),
    ],
)
def test_invalid_inventories_are_refused_with_the_reason(fields: dict[str, Any], says: str) -> None:
    """Each broken rule is named, and ``validate_inventory`` raises it with the ids."""
    problem = rules.inventory_problem(inv(**fields))
    assert problem is not None
    assert says in problem
    with pytest.raises(InvalidInventory) as caught:
        rules.validate_inventory(PROVIDER, "MEMORY_MB", inv(**fields))
    err = caught.value
    assert isinstance(err, InvalidRequest)  # bad input, in the one hierarchy
    assert err.fields == {"provider_uuid": PROVIDER, "resource_class": "MEMORY_MB",
                          "reason": problem}
    assert PROVIDER in str(err)
    assert "MEMORY_MB" in str(err)
    assert problem in str(err)


# -- unit rules ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "amount", "problem"),
    [
        pytest.param({"total": 8}, 1, None, id="default-1"),
        pytest.param({"total": 8}, MAX_INT, None, id="default-max-int"),
        pytest.param({"total": 8}, 0, "amount must be at least 1", id="zero"),
        pytest.param({"total": 8}, -2, "amount must be at least 1", id="negative"),
        pytest.param({"total": 8, "min_unit": 2}, 1, "below min_unit 2", id="below-min"),
        pytest.param({"total": 8, "min_unit": 2}, 2, None, id="at-min"),
        pytest.param({"total": 8, "max_unit": 4}, 4, None, id="at-max"),
        pytest.param({"total": 8, "max_unit": 4}, 5, "above max_unit 4", id="above-max"),
        pytest.param({"total": 64, "step_size": 4}, 4, None, id="one-step"),
        pytest.param({"total": 64, "step_size": 4}, 12, None, id="three-steps"),
        pytest.param({"total": 64, "step_size": 4}, 6, "not a multiple of step_size 4",
                     id="off-step"),
        pytest.param({"total": 64, "min_unit": 2, "max_unit": 8, "step_size": 2}, 8, None,
                     id="all-three-ok"),
        pytest.param({"total": 64, "min_unit": 2, "max_unit": 8, "step_size": 2}, 10,
                     "above max_unit 8", id="all-three-above-max"),
        pytest.param({"total": 64, "min_unit": 3, "step_size": 2}, 3,
                     "not a multiple of step_size 2", id="min-not-on-step"),
        # Unit rules are per record, not about capacity: the amount may exceed the total.
        pytest.param({"total": 2}, 5, None, id="units-ignore-capacity"),
    ],
)
def test_unit_rules(fields: dict[str, Any], amount: int, problem: str | None) -> None:
    """min_unit <= amount <= max_unit and amount % step_size == 0, for one record."""
    assert rules.unit_problem(inv(**fields), amount) == problem


def test_check_units_raises_with_every_id_and_the_reason() -> None:
    """The error names consumer, provider, class, amount and the broken rule."""
    with pytest.raises(InvalidAllocation) as caught:
        rules.check_units(CONSUMER, PROVIDER, "DISK_GB", inv(total=100, step_size=10), 15)
    err = caught.value
    assert err.fields == {"consumer_uuid": CONSUMER, "provider_uuid": PROVIDER,
                          "resource_class": "DISK_GB", "amount": 15,
                          "reason": "not a multiple of step_size 10"}
    for part in (CONSUMER, PROVIDER, "DISK_GB", "15", "step_size 10"):
        assert part in str(err)
    rules.check_units(CONSUMER, PROVIDER, "DISK_GB", inv(total=100, step_size=10), 20)


# -- capacity check and the no-worse rule --------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "before", "after", "exceeded"),
    [
        pytest.param({"total": 4}, 0, 4, False, id="fills-exactly"),
        pytest.param({"total": 4}, 0, 5, True, id="one-too-many"),
        pytest.param({"total": 4}, 3, 4, False, id="takes-the-last"),
        pytest.param({"total": 4}, 4, 5, True, id="full"),
        pytest.param({"total": 4, "reserved": 4}, 0, 1, True, id="capacity-0"),
        pytest.param({"total": 4, "reserved": 4}, 0, 0, False, id="capacity-0-unused"),
        pytest.param({"total": 3, "allocation_ratio": 1.5}, 0, 4, False, id="ratio-1.5-fits-4"),
        pytest.param({"total": 3, "allocation_ratio": 1.5}, 0, 5, True, id="ratio-1.5-not-5"),
        pytest.param({"total": 3, "allocation_ratio": 1.5}, 4, 5, True, id="ratio-1.5-full"),
        pytest.param({"total": 8, "reserved": 2}, 5, 6, False, id="reserved-fits"),
        pytest.param({"total": 8, "reserved": 2}, 5, 7, True, id="reserved-exceeds"),
        # Over capacity already (inventory lowered to 2 under a usage of 4): no worse is fine.
        pytest.param({"total": 2}, 4, 3, False, id="over-shrinks"),
        pytest.param({"total": 2}, 4, 1, False, id="over-shrinks-below-capacity"),
        pytest.param({"total": 2}, 4, 4, False, id="over-keeps"),
        pytest.param({"total": 2}, 4, 5, True, id="over-grows"),
        pytest.param({"total": 2}, 1, 3, True, id="under-to-over"),
    ],
)
def test_capacity_exceeded(
    fields: dict[str, Any], before: int, after: int, exceeded: bool
) -> None:
    """A write may not leave usage above capacity unless it was already there and the write
    does not make it worse."""
    assert rules.capacity_exceeded(inv(**fields), before, after) is exceeded
    if exceeded:
        with pytest.raises(InsufficientCapacity):
            rules.check_capacity(PROVIDER, "VCPU", inv(**fields), before, after)
    else:
        rules.check_capacity(PROVIDER, "VCPU", inv(**fields), before, after)


@pytest.mark.parametrize(
    ("fields", "before", "after", "expected"),
    [
        pytest.param({"total": 4}, 3, 6, {"requested": 3, "used": 3, "capacity": 4, "free": 1},
                     id="partly-free"),
        pytest.param({"total": 3, "allocation_ratio": 1.5}, 0, 5,
                     {"requested": 5, "used": 0, "capacity": 4, "free": 4}, id="ratio"),
        pytest.param({"total": 2}, 4, 5, {"requested": 1, "used": 4, "capacity": 2, "free": 0},
                     id="over-capacity-free-is-0"),
    ],
)
def test_insufficient_capacity_carries_the_numbers(
    fields: dict[str, Any], before: int, after: int, expected: dict[str, int]
) -> None:
    """requested (the growth), used (before the write), capacity and free, plus the ids."""
    with pytest.raises(InsufficientCapacity) as caught:
        rules.check_capacity(PROVIDER, "VCPU", inv(**fields), before, after)
    err: LedgerError = caught.value
    assert err.fields == {"provider_uuid": PROVIDER, "resource_class": "VCPU", **expected}
    assert err.to_dict() == {"error": "InsufficientCapacity", "message": str(err),
                             **err.fields}
    message = str(err)
    assert PROVIDER in message
    assert f"cannot fit {expected['requested']} more VCPU" in message
    assert f"{expected['used']} used of capacity {expected['capacity']}" in message
    assert f"{expected['free']} free" in message
