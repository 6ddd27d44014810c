"""Errors as Placement says them: one table from the ledger's errors to HTTP statuses and
Placement's error codes, and the ``{"errors": [...]}`` body.

The table is ordered most specific first; the first class an error is an instance of
decides. Handlers raise :class:`HTTPError` for what only HTTP knows (a malformed body, an
unknown route, a version a handler does not serve).
"""

from __future__ import annotations

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


def from_ledger(err: e.LedgerError) -> HTTPError:
    """The HTTP refusal of a ledger error, by the table."""
    for cls, status, code in TABLE:
        if isinstance(err, cls):
            return HTTPError(status, err.message, code)
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
