"""Errors as Placement says them: one table from the ledger's errors to HTTP statuses and
Placement's error codes, and the ``{"errors": [...]}`` body.

The table is ordered most specific first; the first class an error is an instance of
decides. Handlers raise :class:`HTTPError` for what only HTTP knows (a malformed body, an
unknown route, a version a handler does not serve).
"""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from allocation_ledger.domain import errors as e

DEFAULT = "placement.undefined_code"
CONCURRENT_UPDATE = "placement.concurrent_update"
DUPLICATE_NAME = "placement.duplicate_name"
INVENTORY_INUSE = "placement.inventory.inuse"
PROVIDER_IN_USE = "placement.resource_provider.inuse"
PROVIDER_CANNOT_DELETE_PARENT = "placement.resource_provider.cannot_delete_parent"
PROVIDER_NOT_FOUND = "placement.resource_provider.not_found"

TABLE: tuple[tuple[type[e.LedgerError], int, str], ...] = (
    (e.ProviderHasChildren, 409, PROVIDER_CANNOT_DELETE_PARENT),
    (e.CommandIdReused, 409, DEFAULT),  # an Idempotency-Key sent again with another request
    (e.StoreUnavailable, 503, DEFAULT),  # the store lost or unreachable: retry (same key)
    (e.ProviderInUse, 409, PROVIDER_IN_USE),
    (e.InventoryInUse, 409, INVENTORY_INUSE),
    (e.TraitInUse, 409, DEFAULT),
    (e.Conflict, 409, CONCURRENT_UPDATE),  # consumer/provider generations, exhausted retries
    (e.ProviderExists, 409, DUPLICATE_NAME),
    (e.ProviderNameTaken, 409, DUPLICATE_NAME),
    (e.ResourceClassExists, 409, DEFAULT),
    (e.InsufficientCapacity, 409, DEFAULT),
    (e.InvalidAllocation, 409, DEFAULT),  # Placement: constraints violated is a 409
    (e.ResourceClassNotOnProvider, 409, DEFAULT),
    (e.DevicesUnavailable, 409, DEFAULT),
    (e.DeviceInUse, 409, DEFAULT),
    (e.NestedAllocationMove, 409, DEFAULT),
    (e.InvalidTransition, 409, DEFAULT),
    (e.MigrationInProgress, 409, DEFAULT),
    (e.NotFound, 404, DEFAULT),
    (e.InvalidRequest, 400, DEFAULT),
    (e.LedgerError, 400, DEFAULT),
)


class HTTPError(Exception):
    """Raised by the HTTP layer for a refusal that has a status but no ledger error."""

    def __init__(self, status: int, detail: str, code: str = DEFAULT,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.code = code
        self.headers = headers or {}


def _null(value: int | None) -> str:
    return "null" if value is None else str(value)


def _consumer_conflict(err: e.ConsumerGenerationConflict) -> str:
    # Placement's "expected" is the stored generation and "got" the request's; Nova tells a
    # consumer conflict from a provider race by "consumer generation conflict" alone.
    return (f"consumer generation conflict - expected {_null(err.actual)} but got "
            f"{err.expected} (consumer {err.consumer_uuid})")


def _allocation(rc: str, rp: str, what: str) -> str:
    return (f"Unable to allocate inventory: Unable to create allocation for '{rc}' on "
            f"resource provider '{rp}'. The requested amount would {what}.")


# Placement's wording for the errors whose text its clients (Nova) or its API tests read;
# the ledger's ids and numbers follow in brackets where the wording leaves room. Every
# other error keeps the ledger's own message.
_DETAILS: dict[type[e.LedgerError], Callable[[Any], str]] = {
    e.ConsumerGenerationConflict: _consumer_conflict,
    e.ProviderGenerationConflict: lambda err: (
        f"resource provider generation conflict: provider {err.provider_uuid} is at "
        f"generation {err.actual}, the request named {err.expected}"),
    e.ConcurrentUpdate: lambda err: (
        "Inventory and/or allocations changed while attempting to allocate: Another thread "
        "concurrently updated the resource provider data. Please retry your update "
        f"(providers {', '.join(err.provider_uuids)}; {err.attempts} attempts)"),
    e.InsufficientCapacity: lambda err: (
        _allocation(err.resource_class, err.provider_uuid, "exceed the capacity")
        + f" ({err.requested} requested, {err.used} used of capacity {err.capacity}, "
          f"{err.free} free)"),
    e.InvalidAllocation: lambda err: (
        _allocation(err.resource_class, err.provider_uuid, "violate inventory constraints")
        + f" ({err.amount}: {err.reason})"),
    e.ResourceClassNotOnProvider: lambda err: (
        f"Unable to allocate inventory: Inventory for '{err.resource_class}' on resource "
        f"provider '{err.provider_uuid}' invalid."),
    e.InvalidInventory: lambda err: (
        f"Invalid inventory for '{err.resource_class}' on resource provider "
        f"'{err.provider_uuid}'. "
        + ("The reserved value is greater than total." if err.reason.startswith("reserved ")
           and "exceeds total" in err.reason else f"{err.reason[:1].upper()}{err.reason[1:]}.")),
    e.InventoryInUse: lambda err: (
        f"Inventory for '{err.resource_class}' on resource provider '{err.provider_uuid}' "
        f"in use. ({err.used} allocated)"),
    e.ProviderHasChildren: lambda err: (
        f"Unable to delete parent resource provider {err.provider_uuid}: It has child "
        f"resource providers. ({', '.join(err.children)})"),
    e.ProviderInUse: lambda err: (
        f"Unable to delete resource provider {err.provider_uuid}: Resource provider has "
        f"allocations. ({err.reason})"),
    e.ProviderExists: lambda err: (
        f"Conflicting resource provider uuid: {err.provider_uuid} already exists."),
    e.ProviderNameTaken: lambda err: (
        f"Conflicting resource provider name: {err.name} already exists."),
    e.ResourceClassExists: lambda err: (
        f"Conflicting resource class already exists: {err.resource_class}"),
    e.ProviderNotFound: lambda err: (
        f"No resource provider with uuid {err.provider_uuid} found"),
}


def detail(err: e.LedgerError) -> str:
    """The text a client reads for ``err``: Placement's wording where clients match it."""
    for cls in type(err).__mro__:
        if cls in _DETAILS:
            return _DETAILS[cls](err)
    return err.message


def from_ledger(err: e.LedgerError) -> HTTPError:
    """The HTTP refusal of a ledger error, by the table."""
    for cls, status, code in TABLE:
        if isinstance(err, cls):
            return HTTPError(status, detail(err), code)
    raise AssertionError("LedgerError is the table's last row")  # pragma: no cover


def body(err: HTTPError, request_id: str) -> dict[str, Any]:
    """Placement's error document."""
    return {"errors": [{
        "status": err.status,
        "title": HTTPStatus(err.status).phrase,
        "detail": err.detail,
        "code": err.code,
        "request_id": request_id,
    }]}
