"""The read side as the service API sees it: queries over the projections.

The projections live in the top-level ``projections`` package; the service only knows this
protocol, and ``bootstrap.open_ledger(..., read_side=True)`` plugs the package in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from allocation_ledger.domain.provider_filters import ProviderFilter


class ReadSide(Protocol):
    """Queries over the read models, answered after catching up with the ledger."""

    def host_usage(self, root_uuid: str | None = None) -> Sequence[Any]:
        """Per provider and class: used, capacity, free, over capacity."""
        ...

    def tree_usage(self, root_uuid: str | None = None) -> Sequence[Any]:
        """The same rolled up per host (root tree)."""
        ...

    def free_capacity(self, resource_class: str, at_least: int = 1) -> Sequence[Any]:
        """Hosts with at least ``at_least`` of a class free, most free first."""
        ...

    def devices_of_host(self, root_uuid: str) -> Sequence[Any]:
        """Every device of a host's tree with holder and role."""
        ...

    def migrations_in_flight(self, older_than_seconds: float = 0.0) -> Sequence[Any]:
        """Migrations in flight that started at least that long ago, oldest first."""
        ...

    def providers(self) -> Sequence[Any]:
        """Every live provider: name, parent, root, generation."""
        ...

    def providers_named(self, name: str) -> Sequence[Any]:
        """The live providers named ``name`` (one, or none): the same rows."""
        ...

    def providers_matching(self, wanted: ProviderFilter) -> Sequence[Any]:
        """The live providers a listing's filters keep (Placement's ``GET
        /resource_providers``): name, parent, root, generation."""
        ...

    def provider_traits(self) -> dict[str, list[str]]:
        """Every live provider's traits, by provider UUID."""
        ...

    def provider_aggregates(self) -> dict[str, list[str]]:
        """Every live provider's aggregates, by provider UUID."""
        ...

    def holdings_on(self, provider_uuid: str) -> Sequence[Any]:
        """Every consumer's allocations on one provider (consumer, generation, resources)."""
        ...

    def project_usages(self, project_id: str, user_id: str | None = None,
                       consumer_type: str | None = None) -> Sequence[Any]:
        """Usage per consumer type and class of a project's (and user's) consumers."""
        ...

    def close(self) -> None:
        """Release its connections."""
        ...
