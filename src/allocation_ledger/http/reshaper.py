"""``POST /reshaper`` (1.30): a provider tree's inventories and allocations in one write.

The body is Placement's: ``inventories`` by provider UUID (at least one), each its
``resource_provider_generation`` and whole ``inventories``; ``allocations`` by consumer UUID
(may be empty), each as ``POST /allocations`` takes it at the request's version (``mappings``
from 1.34, ``consumer_type`` required from 1.38). 204 on success; Placement's answers to
refusals: 400 for a body its schema refuses, an unknown provider or resource class; 409
``placement.concurrent_update`` for a stale provider or consumer generation,
``placement.inventory.inuse`` for a class removed while used, and ``Unable to allocate
inventory`` for allocations that do not fit.
"""

from __future__ import annotations

from typing import Any

from allocation_ledger.domain.errors import (
    InvalidInventory,
    InventoryInUse,
    ProviderGenerationConflict,
    ProviderNotFound,
)
from allocation_ledger.http import errors, resource_classes, shapes
from allocation_ledger.http.allocations import consumer_write
from allocation_ledger.http.context import Ctx, Reply
from allocation_ledger.http.inventories import inventory_record


def _inventories(ctx: Ctx, value: Any) -> dict[str, Any]:
    """Provider -> ``{resource_provider_generation, inventories}``, each record checked."""
    by_provider = shapes.obj(value, where="inventories")
    if not by_provider:
        raise shapes.invalid("inventories does not have enough properties", "minProperties")
    out: dict[str, Any] = {}
    for rp, given in by_provider.items():
        rp_uuid = shapes.uuid_param(rp, "resource provider uuid")
        entry = shapes.obj(given, required=("resource_provider_generation", "inventories"),
                           allowed=(), where=rp)
        generation = shapes.typed(entry, "resource_provider_generation", "integer")
        records = shapes.obj(shapes.typed(entry, "inventories", "object"), where="inventories")
        out[rp_uuid] = {
            "resource_provider_generation": generation,
            "inventories": {rc: inventory_record(ctx, shapes.obj(v, where=rc), rc, rp_uuid)
                            for rc, v in records.items()},
        }
    return out


def _allocations(ctx: Ctx, value: Any) -> dict[str, Any]:
    """Consumer -> its whole new allocation, as ``POST /allocations`` reads it."""
    out: dict[str, Any] = {}
    for consumer, body in shapes.obj(value, where="allocations").items():
        if not ctx.at_least(1, 34) and isinstance(body, dict) and "mappings" in body:
            raise shapes.invalid(f"Additional properties are not allowed ('mappings' was "
                                 f"unexpected) in consumer {consumer}",
                                 "additionalProperties")
        w = consumer_write(ctx, shapes.uuid_param(consumer, "consumer_uuid"), body, True)
        out[w["consumer_uuid"]] = {
            "allocations": w["allocations"], "project_id": w["project_id"],
            "user_id": w["user_id"], "consumer_generation": w["expected_generation"],
            "consumer_type": w["consumer_type"]}
    return out


def _check_classes(ctx: Ctx, inventories: dict[str, Any], allocations: dict[str, Any]
                   ) -> None:
    named = {rc for entry in inventories.values() for rc in entry["inventories"]}
    named |= {rc for w in allocations.values() for r in w["allocations"].values() for rc in r}
    for rc in sorted(named):
        if not resource_classes.exists(ctx, rc):
            raise errors.HTTPError(400, f"malformed reshaper data: No such resource class "
                                        f"{rc}.")


def reshape(ctx: Ctx) -> Reply:
    """``POST /reshaper``: 204 once every inventory and allocation is replaced."""
    data = shapes.obj(ctx.json(), required=("inventories", "allocations"), allowed=())
    inventories = _inventories(ctx, data["inventories"])
    allocations = _allocations(ctx, data["allocations"])
    _check_classes(ctx, inventories, allocations)
    try:
        ctx.ledger.reshape(inventories, allocations, **ctx.write())
    except ProviderGenerationConflict as err:
        raise errors.HTTPError(409, f"resource provider generation conflict for provider "
                                    f"{err.provider_uuid}: actual: {err.actual}, given: "
                                    f"{err.expected}", errors.CONCURRENT_UPDATE) from err
    except ProviderNotFound as err:
        if err.provider_uuid in inventories:
            raise errors.HTTPError(400, f"Resource provider {err.provider_uuid} in "
                                        f"inventories not found: {errors.detail(err)}",
                                   errors.PROVIDER_NOT_FOUND) from err
        raise errors.HTTPError(400, f"Allocation for resource provider "
                                    f"'{err.provider_uuid}' that does not exist.") from err
    except InventoryInUse as err:
        raise errors.HTTPError(409, f"update conflict: {errors.detail(err)}",
                               errors.INVENTORY_INUSE) from err
    except InvalidInventory as err:
        raise errors.HTTPError(400, f"Bad inventory {err.resource_class} for resource "
                                    f"provider {err.provider_uuid}: {errors.detail(err)}"
                               ) from err
    return Reply(204)
