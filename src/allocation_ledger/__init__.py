"""An event-sourced ledger of cloud resource allocations.

Every claim, swap, confirm, revert and forced move of a server's resources, and every change
of a host's inventory, is an event in one ledger. Consumers (instances, migrations) and
providers (hosts and their nested children) are event streams; a stream's version is its
generation, and the event store's unique (stream, version) key is what enforces it.

Start with :func:`open_ledger`, which returns a :class:`Ledger`. Every error the ledger
raises on purpose is a :class:`LedgerError`; all of them are importable from here. The
service and the store are imported on first use, so importing the package (or its command
line) stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from allocation_ledger.domain.errors import (
    CommandIdReused,
    ConcurrentUpdate,
    Conflict,
    ConsumerGenerationConflict,
    ConsumerHoldsNothing,
    ConsumerNotFound,
    DeviceInUse,
    DevicesUnavailable,
    InsufficientCapacity,
    InvalidAllocation,
    InvalidInventory,
    InvalidRequest,
    InvalidTransition,
    InventoryInUse,
    LedgerError,
    LedgerNotEmpty,
    MigrationInProgress,
    MigrationNotFound,
    NestedAllocationMove,
    NotFound,
    OutcomeUnknown,
    ProviderExists,
    ProviderGenerationConflict,
    ProviderHasChildren,
    ProviderInUse,
    ProviderNameTaken,
    ProviderNotFound,
    ReadModelsDiverged,
    ResourceClassExists,
    ResourceClassNotFound,
    ResourceClassNotOnProvider,
    StandardTrait,
    StoreLost,
    StoreNotFound,
    StoreUnavailable,
    StoreUnusable,
    TraitInUse,
    TraitNotFound,
    UnknownPrefix,
    UnknownTraits,
    UnreadableEvent,
)

if TYPE_CHECKING:
    from allocation_ledger.application.ledger import Ledger
    from allocation_ledger.bootstrap import open_ledger

__all__ = [
    "CommandIdReused",
    "ConcurrentUpdate",
    "Conflict",
    "ConsumerGenerationConflict",
    "ConsumerHoldsNothing",
    "ConsumerNotFound",
    "DeviceInUse",
    "DevicesUnavailable",
    "InsufficientCapacity",
    "InvalidAllocation",
    "InvalidInventory",
    "InvalidRequest",
    "InvalidTransition",
    "InventoryInUse",
    "Ledger",
    "LedgerError",
    "LedgerNotEmpty",
    "MigrationInProgress",
    "MigrationNotFound",
    "NestedAllocationMove",
    "NotFound",
    "OutcomeUnknown",
    "ProviderExists",
    "ProviderGenerationConflict",
    "ProviderHasChildren",
    "ProviderInUse",
    "ProviderNameTaken",
    "ProviderNotFound",
    "ReadModelsDiverged",
    "ResourceClassExists",
    "ResourceClassNotFound",
    "ResourceClassNotOnProvider",
    "StandardTrait",
    "StoreLost",
    "StoreNotFound",
    "StoreUnavailable",
    "StoreUnusable",
    "TraitInUse",
    "TraitNotFound",
    "UnknownPrefix",
    "UnknownTraits",
    "UnreadableEvent",
    "__version__",
    "open_ledger",
]


def __getattr__(name: str) -> Any:
    """``Ledger``, ``open_ledger`` and ``__version__``, imported when first asked for."""
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("allocation-ledger")
        except PackageNotFoundError:  # pragma: no cover - a bare checkout
            return "0+unknown"
    if name == "Ledger":
        from allocation_ledger.application.ledger import Ledger

        return Ledger
    if name == "open_ledger":
        from allocation_ledger.bootstrap import open_ledger

        return open_ledger
    raise AttributeError(f"module 'allocation_ledger' has no attribute {name!r}")
