"""``/resource_providers/{uuid}/inventories`` and ``.../inventories/{resource_class}``.

Every write checks the provider generation the body names (409
``placement.concurrent_update`` when stale). Placement's quirk is kept: deleting one class
that is still allocated answers ``placement.concurrent_update``, the whole-set writes
``placement.inventory.inuse``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from allocation_ledger.application.views import ProviderView
from allocation_ledger.domain.errors import InvalidInventory, InventoryInUse
from allocation_ledger.http import errors, resource_classes, shapes
from allocation_ledger.http.context import Ctx, Reply
from allocation_ledger.http.providers import found

FIELDS = ("total", "reserved", "min_unit", "max_unit", "step_size", "allocation_ratio")
MAX_INT = 2147483647
# Placement's inventory schema (the ledger's own rules follow in the command)
BOUNDS: dict[str, tuple[float, float]] = {
    "total": (1, MAX_INT), "reserved": (0, MAX_INT), "min_unit": (1, MAX_INT),
    "max_unit": (1, MAX_INT), "step_size": (1, MAX_INT), "allocation_ratio": (0, 3.40282e38),
}


def _inventories(view: ProviderView) -> dict[str, Any]:
    return {"inventories": {rc: asdict(inv) for rc, inv in view.inventories.items()},
            "resource_provider_generation": view.generation}


def _one(view: ProviderView, rc: str) -> dict[str, Any]:
    return {**asdict(view.inventories[rc]), "resource_provider_generation": view.generation}


def _record(ctx: Ctx, data: dict[str, Any], where: str, uuid: str = "",
            verb: str = "update") -> dict[str, Any]:
    shapes.obj(data, required=("total",), allowed=(*FIELDS, "resource_provider_generation"),
               where=where)
    record = {k: shapes.typed(data, k, "number" if k == "allocation_ratio" else "integer")
              for k in FIELDS if k in data}
    for k, (least, most) in BOUNDS.items():
        shapes.bounded(record, k, least, most)
    reserved = record.get("reserved", 0)
    if not ctx.at_least(1, 26) and reserved >= record["total"]:
        raise errors.HTTPError(400, f"Unable to {verb} inventory for resource provider "
                                    f"{uuid}: Invalid inventory for '{where}' on resource "
                                    f"provider '{uuid}'. The reserved value is greater "
                                    f"than or equal to total. (reserved {reserved}, total "
                                    f"{record['total']}; equal is allowed from 1.26)")
    return record


def _written(ctx: Ctx, uuid: str, verb: str, write: Callable[[], ProviderView]
             ) -> ProviderView:
    """``write``'s provider; an inventory the ledger refuses is Placement's 400
    ``Unable to <verb> inventory for resource provider ...``."""
    try:
        return write()
    except InvalidInventory as err:
        raise errors.HTTPError(400, f"Unable to {verb} inventory for resource provider "
                                    f"{uuid}: {errors.detail(err)}") from err


def _generation(data: dict[str, Any], view: ProviderView) -> int:
    """The generation a write names, checked against the provider's (POST may omit it)."""
    if "resource_provider_generation" not in data:
        return view.generation
    generation = shapes.typed(data, "resource_provider_generation", "integer")
    if generation != view.generation:
        raise errors.HTTPError(409, f"resource provider generation conflict: expected "
                                    f"{generation}, actual {view.generation}",
                               errors.CONCURRENT_UPDATE)
    return int(generation)


def _class_of(ctx: Ctx, view: ProviderView, suffix: str = "") -> str:
    rc = ctx.params["resource_class"]
    if rc not in view.inventories:
        raise errors.HTTPError(404, f"No inventory of class {rc} for {view.provider_uuid}"
                                    if not suffix else
                                    f"No inventory of class {rc} found{suffix} "
                                    f"({view.provider_uuid})")
    return rc


def list_inventories(ctx: Ctx) -> Reply:
    """``GET .../inventories``."""
    return Reply(body=_inventories(found(ctx, ctx.params["uuid"])))


def set_inventories(ctx: Ctx) -> Reply:
    """``PUT .../inventories``: replace the whole set."""
    view = found(ctx, ctx.params["uuid"])
    data = shapes.obj(ctx.json(), required=("resource_provider_generation", "inventories"))
    inventories = shapes.typed(data, "inventories", "object")
    records = {rc: _record(ctx, shapes.obj(v, where=rc), rc, view.provider_uuid)
               for rc, v in inventories.items()}
    generation = _generation(data, view)
    resource_classes.check_known(ctx, view.provider_uuid, set(records) - set(view.inventories))
    new = _written(ctx, view.provider_uuid, "update", lambda: ctx.ledger.set_inventories(
        view.provider_uuid, records, generation, **ctx.write()))
    return Reply(body=_inventories(new))


def create_inventory(ctx: Ctx) -> Reply:
    """``POST .../inventories``: add one class (409 when it is already there)."""
    view = found(ctx, ctx.params["uuid"])
    data = shapes.obj(ctx.json(), required=("resource_class", "total"),
                      allowed=(*FIELDS, "resource_provider_generation"))
    rc = shapes.typed(data, "resource_class", "string")
    record = _record(ctx, {k: v for k, v in data.items() if k in FIELDS}, rc,
                     view.provider_uuid, "create")
    generation = _generation(data, view)
    if rc in view.inventories:
        raise errors.HTTPError(409, f"Update conflict: Inventory for {rc} on resource "
                                    f"provider {view.provider_uuid} already exists.",
                               errors.CONCURRENT_UPDATE)
    resource_classes.check_known(ctx, view.provider_uuid, {rc})
    new = _written(ctx, view.provider_uuid, "create", lambda: ctx.ledger.set_inventory(
        view.provider_uuid, rc, record, generation, **ctx.write()))
    location = f"/resource_providers/{view.provider_uuid}/inventories/{rc}"
    return Reply(201, _one(new, rc), {"location": location})


# os-resource-classes' standard classes in its order, which is their ids in Placement's
# database: Placement names the classes in use in that order, custom ones (ids from 10000,
# by creation; here by name) after them.
_STANDARD_ORDER = (
    "VCPU", "MEMORY_MB", "DISK_GB", "PCI_DEVICE", "SRIOV_NET_VF", "NUMA_SOCKET", "NUMA_CORE",
    "NUMA_THREAD", "NUMA_MEMORY_MB", "IPV4_ADDRESS", "VGPU", "VGPU_DISPLAY_HEAD",
    "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC", "PCPU",
    "MEM_ENCRYPTION_CONTEXT", "FPGA", "PGPU", "NET_PACKET_RATE_KILOPACKET_PER_SEC",
    "NET_PACKET_RATE_EGR_KILOPACKET_PER_SEC", "NET_PACKET_RATE_IGR_KILOPACKET_PER_SEC")


def _placement_order(rc: str) -> tuple[int, str]:
    return (_STANDARD_ORDER.index(rc) if rc in _STANDARD_ORDER else len(_STANDARD_ORDER), rc)


def delete_inventories(ctx: Ctx) -> Reply:
    """``DELETE .../inventories`` (1.5): remove every class; refused (409) naming every
    class still allocated, as Placement's words do."""
    view = found(ctx, ctx.params["uuid"])
    try:
        ctx.ledger.set_inventories(view.provider_uuid, {}, view.generation, **ctx.write())
    except InventoryInUse as err:
        usages = found(ctx, view.provider_uuid).usages
        held = sorted((rc for rc, used in usages.items() if used), key=_placement_order)
        raise errors.HTTPError(409, f"Inventory for '{', '.join(held)}' on resource provider "
                                    f"'{err.provider_uuid}' in use.",
                               errors.INVENTORY_INUSE) from err
    return Reply(204)


def show_inventory(ctx: Ctx) -> Reply:
    """``GET .../inventories/{rc}``."""
    view = found(ctx, ctx.params["uuid"])
    return Reply(body=_one(view, _class_of(ctx, view)))


def update_inventory(ctx: Ctx) -> Reply:
    """``PUT .../inventories/{rc}``: change one class (400 when the provider lacks it)."""
    view = found(ctx, ctx.params["uuid"])
    data = shapes.obj(ctx.json(), required=("resource_provider_generation", "total"),
                      allowed=FIELDS)
    rc = ctx.params["resource_class"]
    record = _record(ctx, {k: v for k, v in data.items() if k in FIELDS}, rc,
                     view.provider_uuid)
    generation = _generation(data, view)
    if rc not in view.inventories:
        raise errors.HTTPError(400, f"No inventory record with resource class {rc} for "
                                    f"resource provider {view.provider_uuid}")
    new = _written(ctx, view.provider_uuid, "update", lambda: ctx.ledger.set_inventory(
        view.provider_uuid, rc, record, generation, **ctx.write()))
    return Reply(body=_one(new, rc))


def delete_inventory(ctx: Ctx) -> Reply:
    """``DELETE .../inventories/{rc}``: 404 when absent, 409 while allocated."""
    view = found(ctx, ctx.params["uuid"])
    rc = _class_of(ctx, view, " for delete")
    try:
        ctx.ledger.delete_inventory(view.provider_uuid, rc, view.generation,
                                    **ctx.write())
    except InventoryInUse as err:
        raise errors.HTTPError(409, f"Unable to delete inventory of class {rc}: "
                                    f"{errors.detail(err)}", errors.CONCURRENT_UPDATE) from err
    return Reply(204)


#: one inventory record of a body checked as Placement's schema checks it (the reshaper's too)
inventory_record = _record
