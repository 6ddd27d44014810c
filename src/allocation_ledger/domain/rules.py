"""Placement's capacity and unit rules, as pure functions over frozen values.

These are the only place the rules are computed; aggregates and audits call them.
"""

from __future__ import annotations

from allocation_ledger.domain.errors import (
    InsufficientCapacity,
    InvalidAllocation,
    InvalidInventory,
)
from allocation_ledger.domain.values import MAX_INT, Inventory


def validate_inventory(provider_uuid: str, resource_class: str, inventory: Inventory) -> None:
    """Raise :class:`InvalidInventory` unless ``inventory`` obeys Placement's validation."""
    problem = inventory_problem(inventory)
    if problem:
        raise InvalidInventory(provider_uuid, resource_class, problem)


def inventory_problem(inv: Inventory) -> str | None:
    """What is wrong with an inventory record, or ``None``."""
    for name in ("total", "reserved", "min_unit", "max_unit", "step_size"):
        value = getattr(inv, name)
        if isinstance(value, bool) or not isinstance(value, int):
            return f"{name} must be an integer, got {value!r}"
        if value > MAX_INT:
            return f"{name} {value} exceeds {MAX_INT}"
    if inv.total < 1:
        return f"total must be at least 1, got {inv.total}"
    if inv.reserved < 0:
        return f"reserved must not be negative, got {inv.reserved}"
    if inv.reserved > inv.total:
        return f"reserved {inv.reserved} exceeds total {inv.total}"
    for name in ("min_unit", "max_unit", "step_size"):
        if getattr(inv, name) < 1:
            return f"{name} must be at least 1, got {getattr(inv, name)}"
    if inv.min_unit > inv.max_unit:
        return f"min_unit {inv.min_unit} exceeds max_unit {inv.max_unit}"
    ratio = inv.allocation_ratio
    if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not ratio > 0:
        return f"allocation_ratio must be greater than 0, got {ratio!r}"
    if ratio > MAX_INT:
        return f"allocation_ratio {ratio} exceeds {MAX_INT}"
    return None


def unit_problem(inv: Inventory, amount: int) -> str | None:
    """Why one allocation record of ``amount`` breaks the unit rules, or ``None``."""
    if amount < 1:
        return "amount must be at least 1"
    if amount < inv.min_unit:
        return f"below min_unit {inv.min_unit}"
    if amount > inv.max_unit:
        return f"above max_unit {inv.max_unit}"
    if amount % inv.step_size:
        return f"not a multiple of step_size {inv.step_size}"
    return None


def check_units(
    consumer_uuid: str, provider_uuid: str, resource_class: str, inv: Inventory, amount: int
) -> None:
    """Raise :class:`InvalidAllocation` unless one record obeys min/max/step."""
    problem = unit_problem(inv, amount)
    if problem:
        raise InvalidAllocation(consumer_uuid, provider_uuid, resource_class, amount, problem)


def free(capacity: int, used: int) -> int:
    """What is free of ``capacity`` with ``used`` in use (0 when over capacity)."""
    return max(capacity - used, 0)


def over_capacity(capacity: int, used: int) -> bool:
    """True when usage exceeds capacity (the inventory was lowered under it)."""
    return used > capacity


def capacity_exceeded(inv: Inventory, used_before: int, used_after: int) -> bool:
    """True when a write leaves usage above capacity and made it worse.

    A provider already over capacity (its inventory was lowered) may still shrink or keep
    its usage; it may not grow.
    """
    capacity = inv.capacity
    if used_after <= capacity:
        return False
    return used_after > used_before


def check_capacity(
    provider_uuid: str, resource_class: str, inv: Inventory, used_before: int, used_after: int
) -> None:
    """Raise :class:`InsufficientCapacity` when ``capacity_exceeded``."""
    if capacity_exceeded(inv, used_before, used_after):
        raise InsufficientCapacity(
            provider_uuid,
            resource_class,
            requested=used_after - used_before,
            used=used_before,
            capacity=inv.capacity,
        )
