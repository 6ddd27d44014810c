"""Provider names: one stream per name, so that a name is held by one live provider.

Placement keeps provider names unique with a unique key on its table. The ledger does the
same with the store's unique (stream, version) key: registering, renaming or deleting a
provider also appends to the stream of each name it takes or lets go, in the same atomic
append. Two racing registrations of one name both write the name's next version; the store
lets one in, and the other, decided again, finds the name taken.

A ledger written before name streams holds providers whose names have no stream yet: such a
name is taken into a stream the first time a provider registers or renames to it (the
server's read-side check, which looks the name up among the live providers, still stands
before that).
"""

from __future__ import annotations

from eventsourcing.domain import Aggregate

from allocation_ledger.domain.errors import ProviderNameTaken
from allocation_ledger.domain.ids import provider_name_stream_id
from allocation_ledger.domain.values import PlainState, RequestMeta


class ProviderName(PlainState, Aggregate):
    """A provider name and the provider holding it (``None`` while it is free)."""

    class Event(Aggregate.Event):
        """Base of every name event; ``request`` says who asked and why."""

        request: RequestMeta

    class Taken(Event, Aggregate.Created):
        """The name was first taken, by ``provider_uuid``."""

        name: str
        provider_uuid: str

    class Retaken(Event):
        """The free name was taken again, by ``provider_uuid``."""

        provider_uuid: str

        def apply(self, aggregate: ProviderName) -> None:
            aggregate.holder = self.provider_uuid

    class Released(Event):
        """The provider holding the name was renamed or deleted: the name is free."""

        def apply(self, aggregate: ProviderName) -> None:
            aggregate.holder = None

    def __init__(self, name: str, provider_uuid: str) -> None:
        self.name = name
        self.holder: str | None = provider_uuid

    @classmethod
    def take_new(cls, name: str, provider_uuid: str, request: RequestMeta) -> ProviderName:
        """The first holder of a name never taken before."""
        return cls._create(cls.Taken, id=provider_name_stream_id(name), name=name,
                           provider_uuid=provider_uuid, request=request)

    def take(self, provider_uuid: str, request: RequestMeta) -> None:
        """Take the name for ``provider_uuid``; :class:`ProviderNameTaken` if another
        provider holds it."""
        if self.holder == provider_uuid:
            return
        if self.holder is not None:
            raise ProviderNameTaken(self.name, self.holder)
        self.trigger_event(self.Retaken, provider_uuid=provider_uuid, request=request)

    def release(self, provider_uuid: str, request: RequestMeta) -> None:
        """Let the name go if ``provider_uuid`` holds it."""
        if self.holder == provider_uuid:
            self.trigger_event(self.Released, request=request)

