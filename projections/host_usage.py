"""Host usage: every live provider's place in its tree, and its usage per resource class.

One row per provider (``proj_providers``: name, parent, root, generation, deleted) and one
per provider and class with inventory (``proj_host_usage``: the inventory, ``used``, and
``capacity``, ``free``, ``over_capacity`` computed by the domain's own rule); one per
provider and trait (``proj_provider_traits``) and per provider and aggregate
(``proj_provider_aggregates``). Roll-ups per
root tree are queries (:mod:`.queries`). A deleted provider keeps its tree row,
marked deleted, and loses its usage rows.
"""

from __future__ import annotations

from functools import singledispatch
from typing import Any

from allocation_ledger.domain import rules
from allocation_ledger.domain.provider import Provider
from allocation_ledger.domain.values import Inventory
from allocation_ledger.projections import tables
from allocation_ledger.projections.projection import Projection
from allocation_ledger.projections.row_groups import GroupTable, Row, RowGroups

PROVIDERS = GroupTable(tables.providers, "provider_uuid")
USAGE = GroupTable(tables.host_usage, "provider_uuid")
TRAITS = GroupTable(tables.provider_traits, "provider_uuid")
AGGREGATES = GroupTable(tables.provider_aggregates, "provider_uuid")


@singledispatch
def handle(event: object, rows: RowGroups) -> None:
    """Events that say nothing about hosts change nothing."""


@handle.register(Provider.Registered)
def _registered(event: Provider.Registered, rows: RowGroups) -> None:
    rows.name_stream(event.originator_id, event.provider_uuid)
    _reregistered(event, rows)


@handle.register(Provider.Reregistered)
def _reregistered(event: Provider.Registered | Provider.Reregistered, rows: RowGroups) -> None:
    """A provider registered (again, for a deleted one's UUID: its stream is named already):
    generation 0, nothing in use."""
    rows.put(PROVIDERS, event.provider_uuid, [{
        "provider_uuid": event.provider_uuid,
        "name": event.name,
        "parent_uuid": event.parent_uuid,
        "root_uuid": event.root_uuid,
        "generation": 0,
        "deleted": False,
    }])
    rows.put(USAGE, event.provider_uuid, [])


@handle.register(Provider.Event)
def _other(event: Provider.Event, rows: RowGroups) -> None:
    _advanced(event, rows)


def _advanced(event: Provider.Event, rows: RowGroups) -> Row:
    """A provider event: its generation advances by one unless Placement does not count it
    (a child attached or detached, a rename)."""
    uuid = rows.name(event.originator_id)
    (provider,) = rows.rows(PROVIDERS, uuid)
    provider = {**provider, "generation": provider["generation"] + int(event.counted)}
    rows.put(PROVIDERS, uuid, [provider])
    return provider


@handle.register(Provider.Renamed)
def _renamed(event: Provider.Renamed, rows: RowGroups) -> None:
    provider = _advanced(event, rows)
    rows.put(PROVIDERS, provider["provider_uuid"], [{**provider, "name": event.name}])


@handle.register(Provider.InventoriesSet)
def _inventories_set(event: Provider.InventoriesSet, rows: RowGroups) -> None:
    provider = _advanced(event, rows)
    used = _used(rows, provider)
    rows.put(USAGE, provider["provider_uuid"], [
        usage_row(provider, rc, inventory, used.get(rc, 0))
        for rc, inventory in sorted(event.inventories.items())
    ])


@handle.register(Provider.DevicesSet)
def _devices_set(event: Provider.DevicesSet, rows: RowGroups) -> None:
    provider = _advanced(event, rows)
    by_class = {r["resource_class"]: r for r in rows.rows(USAGE, provider["provider_uuid"])}
    rc = event.resource_class
    if event.inventory is None:
        by_class.pop(rc, None)
    else:
        used = by_class[rc]["used"] if rc in by_class else 0
        by_class[rc] = usage_row(provider, rc, event.inventory, used)
    rows.put(USAGE, provider["provider_uuid"], by_class.values())


@handle.register(Provider.AllocationsChanged)
def _allocations_changed(event: Provider.AllocationsChanged, rows: RowGroups) -> None:
    provider = _advanced(event, rows)
    if not event.usages:
        return
    uuid = provider["provider_uuid"]
    rows.put(USAGE, uuid, [
        _with_used(r, event.usages[r["resource_class"]])
        if r["resource_class"] in event.usages else r
        for r in rows.rows(USAGE, uuid)
    ])


@handle.register(Provider.ParentChanged)
def _parent_changed(event: Provider.ParentChanged, rows: RowGroups) -> None:
    _moved(_advanced(event, rows), rows, event.parent_uuid, event.root_uuid)


@handle.register(Provider.RootChanged)
def _root_changed(event: Provider.RootChanged, rows: RowGroups) -> None:
    provider = _advanced(event, rows)
    _moved(provider, rows, provider["parent_uuid"], event.root_uuid)


def _moved(provider: Row, rows: RowGroups, parent_uuid: str | None, root_uuid: str) -> None:
    """A provider's place in the trees changed: its row and its usage rows follow."""
    uuid = provider["provider_uuid"]
    rows.put(PROVIDERS, uuid, [{**provider, "parent_uuid": parent_uuid, "root_uuid": root_uuid}])
    rows.put(USAGE, uuid, [{**r, "root_uuid": root_uuid} for r in rows.rows(USAGE, uuid)])


@handle.register(Provider.TraitsSet)
def _traits_set(event: Provider.TraitsSet, rows: RowGroups) -> None:
    uuid = _advanced(event, rows)["provider_uuid"]
    rows.put(TRAITS, uuid, [{"provider_uuid": uuid, "trait": t} for t in event.traits])


@handle.register(Provider.AggregatesSet)
def _aggregates_set(event: Provider.AggregatesSet, rows: RowGroups) -> None:
    uuid = _advanced(event, rows)["provider_uuid"]
    rows.put(AGGREGATES, uuid, [{"provider_uuid": uuid, "aggregate_uuid": a}
                                for a in event.aggregates])


@handle.register(Provider.Deleted)
def _deleted(event: Provider.Deleted, rows: RowGroups) -> None:
    provider = _advanced(event, rows)
    rows.put(PROVIDERS, provider["provider_uuid"], [{**provider, "deleted": True}])
    rows.put(USAGE, provider["provider_uuid"], [])
    rows.put(TRAITS, provider["provider_uuid"], [])
    rows.put(AGGREGATES, provider["provider_uuid"], [])


def usage_row(provider: Row, resource_class: str, inventory: dict[str, Any], used: int) -> Row:
    """The usage row of one class: its inventory and what is used, free and over."""
    inv = Inventory.from_dict(inventory)
    return _with_used({
        "provider_uuid": provider["provider_uuid"],
        "resource_class": resource_class,
        "root_uuid": provider["root_uuid"],
        "total": inv.total,
        "reserved": inv.reserved,
        "min_unit": inv.min_unit,
        "max_unit": inv.max_unit,
        "step_size": inv.step_size,
        "allocation_ratio": float(inv.allocation_ratio),
        "capacity": inv.capacity,
    }, used)


def _with_used(row: Row, used: int) -> Row:
    capacity: int = row["capacity"]
    return {**row, "used": used, "free": rules.free(capacity, used),
            "over_capacity": rules.over_capacity(capacity, used)}


def _used(rows: RowGroups, provider: Row) -> dict[str, int]:
    return {r["resource_class"]: r["used"] for r in rows.rows(USAGE, provider["provider_uuid"])}


HOST_USAGE = Projection("host_usage", (PROVIDERS, USAGE, TRAITS, AGGREGATES), handle)
