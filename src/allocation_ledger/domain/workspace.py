"""What a command's decision may ask of the store, as a protocol (no I/O in the domain).

The application layer implements it: it loads aggregates at their latest version, remembers
what it loaded (so a conflict can be told apart from a provider clash) and saves everything
the decision touched in one atomic append.
"""

from __future__ import annotations

from typing import Protocol

from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.migration import Migration
from allocation_ledger.domain.provider import Provider


class Workspace(Protocol):
    """Aggregates a command reads and changes; everything it changes is saved at once."""

    def provider(self, provider_uuid: str) -> Provider:
        """The live provider; :class:`ProviderNotFound` if absent or deleted."""
        ...

    def consumer(self, consumer_uuid: str) -> Consumer | None:
        """The consumer, or ``None`` if it has never been written."""
        ...

    def migration(self, migration_uuid: str) -> Migration:
        """The migration; :class:`MigrationNotFound` if there is none."""
        ...

    def add(self, aggregate: Consumer | Provider) -> None:
        """A new aggregate to save with the rest."""
        ...
