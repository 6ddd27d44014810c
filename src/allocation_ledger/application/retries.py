"""A retried request, decided again on the ledger as it was before its first run.

A client that retries a request with the same command id (an HTTP ``Idempotency-Key``)
must get the first answer. The command itself is idempotent (its record answers a retry),
but a caller often reads before it sends the command: a provider's generation to pass on,
whether a name is free, whether a consumer holds anything. Read now, after the first run,
those answer differently (the generation moved on, the name is taken by the provider the
first run created) and the retry would be refused before the command is even sent.
:class:`LedgerBefore` is the ledger whose reads answer as of just before the recorded
command, so the caller decides exactly as the first time, sends the same command, and gets
the record's answer; its commands are the ledger's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from allocation_ledger.application.command_ids import (
    AsOf,
    CommandId,
    before,
    command_id_of,
    guarded_read,
    recorded,
)
from allocation_ledger.application.inputs import canonical_uuid
from allocation_ledger.application.ledger import Ledger, _consumer
from allocation_ledger.application.readside import ReadSide
from allocation_ledger.application.views import ConsumerView, MigrationView, ProviderView
from allocation_ledger.domain.ids import provider_stream_id, resource_class_stream_id
from allocation_ledger.domain.provider import Provider
from allocation_ledger.domain.resource_class import ResourceClass


def as_before(ledger: Ledger, command_id: CommandId) -> Ledger:
    """``ledger`` itself when ``command_id`` names no applied command, else the ledger as
    it was just before that command."""
    record = guarded_read(lambda: recorded(ledger.store, command_id_of(command_id)))
    if record is None:
        return ledger
    return LedgerBefore(ledger, guarded_read(lambda: before(ledger.store, record)))


class LedgerBefore(Ledger):
    """The ledger, its reads answered as of a point before a recorded command."""

    def __init__(self, ledger: Ledger, point: AsOf) -> None:
        super().__init__(ledger.store, policy=ledger.policy)
        self.commits = ledger.commits
        self._point = point
        if ledger.read_side is not None:
            self.read_side = _ReadsBefore(ledger.read_side, point)

    def provider(self, provider_uuid: str) -> ProviderView:
        """The provider as it was then."""
        uuid = canonical_uuid(provider_uuid)
        return guarded_read(lambda: ProviderView.of(self._point.provider(uuid)))

    def consumer(self, consumer_uuid: str) -> ConsumerView:
        """The consumer as it was then."""
        uuid = canonical_uuid(consumer_uuid)
        return guarded_read(lambda: _consumer(self._point, uuid))

    def migration(self, migration_uuid: str) -> MigrationView:
        """The migration as it was then."""
        uuid = canonical_uuid(migration_uuid)
        return guarded_read(lambda: MigrationView.of(self._point.migration(uuid)))

    def resource_class_exists(self, name: str) -> bool:
        """Whether the custom class existed then."""
        found = guarded_read(lambda: self._point.get(resource_class_stream_id(name)))
        return isinstance(found, ResourceClass) and found.live


class _ReadsBefore:
    """The read side, its provider list as it was then (the providers the command created
    left out, the ones it renamed with their names of then); every other query as now."""

    def __init__(self, reads: ReadSide, point: AsOf) -> None:
        self._reads = reads
        self._point = point

    def __getattr__(self, name: str) -> Any:
        return getattr(self._reads, name)

    def providers_named(self, name: str) -> Sequence[Any]:
        # a provider the retried command renamed matches by its name then, not now
        return [row for row in self.providers() if row.name == name]

    def providers(self) -> Sequence[Any]:
        rows = []
        for row in self._reads.providers():
            if not self._point.pinned(provider_stream_id(row.provider_uuid)):
                rows.append(row)
                continue
            then = self._point.get(provider_stream_id(row.provider_uuid))
            if isinstance(then, Provider) and not then.deleted:
                view = ProviderView.of(then)
                rows.append(replace(row, name=view.name, generation=view.generation))
        return rows
