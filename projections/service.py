"""The read side behind the service API (``allocation_ledger.application.readside``).

Every query first catches the projections up with the ledger's head, so a caller reads its
own writes; a process that runs ``projections follow`` beside it keeps that catch-up short.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from sqlalchemy import Engine

from allocation_ledger.application.inputs import AgeIn, FreeCapacityIn, canonical_uuid, parse
from allocation_ledger.domain.provider_filters import ProviderFilter
from allocation_ledger.projections import queries
from allocation_ledger.projections.readmodels import ReadModels


def _optional_uuid(value: str | None) -> str | None:
    return None if value is None else canonical_uuid(value)


class ProjectedReadSide:
    """Queries over the read models of one ledger; arguments are checked as the ledger's
    commands check theirs (:class:`InvalidRequest`)."""

    def __init__(self, models: ReadModels) -> None:
        self.models = models
        self._catching_up = threading.Lock()

    def _engine(self) -> Engine:
        with self._catching_up:  # one catch-up at a time when threads share the read side
            if not self.models.caught_up():
                self.models.runner().catch_up()
        return self.models.engine

    def host_usage(self, root_uuid: str | None = None) -> Sequence[queries.ClassUsage]:
        """Per provider and class: used, capacity, free, over capacity."""
        return queries.host_usage(self._engine(), _optional_uuid(root_uuid))

    def tree_usage(self, root_uuid: str | None = None) -> Sequence[queries.TreeUsage]:
        """The same rolled up per host (root tree)."""
        return queries.tree_usage(self._engine(), _optional_uuid(root_uuid))

    def free_capacity(self, resource_class: str, at_least: int = 1
                      ) -> Sequence[queries.TreeUsage]:
        """Hosts with at least ``at_least`` of a class free, most free first."""
        asked = parse(FreeCapacityIn, resource_class=resource_class, at_least=at_least)
        return queries.free_capacity(self._engine(), asked.resource_class, asked.at_least)

    def devices_of_host(self, root_uuid: str) -> Sequence[queries.DeviceAssignment]:
        """Every device of a host's tree with holder and role."""
        return queries.devices_of_host(self._engine(), canonical_uuid(root_uuid))

    def migrations_in_flight(self, older_than_seconds: float = 0.0
                             ) -> Sequence[queries.MigrationContext]:
        """Migrations in flight that started at least that long ago, oldest first."""
        age = parse(AgeIn, older_than_seconds=older_than_seconds)
        return queries.migrations_in_flight(self._engine(), age.older_than_seconds)

    def providers(self) -> Sequence[queries.ProviderRow]:
        """Every live provider: name, parent, root, generation."""
        return queries.providers(self._engine())

    def providers_named(self, name: str) -> Sequence[queries.ProviderRow]:
        """The live providers named ``name`` (one, or none)."""
        return queries.providers(self._engine(), name)

    def providers_matching(self, wanted: ProviderFilter) -> Sequence[queries.ProviderRow]:
        """The live providers a listing's filters keep (traits, aggregates, tree, room)."""
        return queries.providers_matching(self._engine(), wanted)

    def provider_traits(self) -> dict[str, list[str]]:
        """Every live provider's traits, by provider UUID."""
        return queries.provider_traits(self._engine())

    def provider_aggregates(self) -> dict[str, list[str]]:
        """Every live provider's aggregates, by provider UUID."""
        return queries.provider_aggregates(self._engine())

    def holdings_on(self, provider_uuid: str) -> Sequence[queries.Holding]:
        """Every consumer's allocations on one provider."""
        return queries.holdings_on(self._engine(), provider_uuid)

    def project_usages(self, project_id: str, user_id: str | None = None,
                       consumer_type: str | None = None) -> Sequence[queries.ProjectUsage]:
        """Usage per consumer type and class of a project's (and user's) consumers."""
        return queries.project_usages(self._engine(), project_id, user_id, consumer_type)

    def close(self) -> None:
        """Release the read models' connections."""
        self.models.close()
