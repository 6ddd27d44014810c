"""The projections there are, by name."""

from __future__ import annotations

from collections.abc import Iterable

from allocation_ledger.projections.allocations import ALLOCATIONS_PROJECTION
from allocation_ledger.projections.devices import DEVICES
from allocation_ledger.projections.host_usage import HOST_USAGE
from allocation_ledger.projections.migrations import MIGRATIONS_PROJECTION
from allocation_ledger.projections.projection import Projection

ALL: tuple[Projection, ...] = (HOST_USAGE, ALLOCATIONS_PROJECTION, DEVICES,
                               MIGRATIONS_PROJECTION)
NAMES: tuple[str, ...] = tuple(p.name for p in ALL)


class UnknownProjection(ValueError):
    """Raised when a projection name is not one of :data:`NAMES`."""


def select(names: Iterable[str] | None = None) -> tuple[Projection, ...]:
    """The projections called ``names`` (all of them for ``None`` or none given)."""
    wanted = list(names or [])
    unknown = sorted(set(wanted) - set(NAMES))
    if unknown:
        raise UnknownProjection(
            f"unknown projection {', '.join(unknown)}: choose from {', '.join(NAMES)}"
        )
    return tuple(p for p in ALL if not wanted or p.name in wanted)
