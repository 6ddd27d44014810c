"""The custom resource class aggregate: one stream per ``CUSTOM_*`` name.

Standard classes always exist and have no stream. A custom class exists once it is created
and until it is deleted; creating it again appends to the same stream, so its whole life
reads in one place. Two racing creations of one name both try to append version 1 (or the
same next version) of its stream: the store's unique key lets one in.

An inventory written before the ledger recorded custom classes may name a class that was
never created; the ledger treats a class that some inventory uses as existing (see
``docs``, resource classes), so old ledgers keep working unchanged.
"""

from __future__ import annotations

from typing import Protocol

from eventsourcing.domain import Aggregate

from allocation_ledger.domain.errors import (
    InvalidRequest,
    ResourceClassExists,
    ResourceClassNotFound,
)
from allocation_ledger.domain.ids import resource_class_stream_id
from allocation_ledger.domain.values import STANDARD_RESOURCE_CLASSES, PlainState, RequestMeta

CUSTOM_PREFIX = "CUSTOM_"


class ResourceClass(PlainState, Aggregate):
    """A custom resource class: its name and whether it exists now."""

    class Event(Aggregate.Event):
        """Base of every resource class event; ``request`` says who asked and why."""

        request: RequestMeta

    class Created(Event, Aggregate.Created):
        """The custom class ``name`` was created (its stream's first event)."""

        name: str

    class Recreated(Event):
        """The class, deleted before, was created again."""

        def apply(self, aggregate: ResourceClass) -> None:
            aggregate.live = True

    class Deleted(Event):
        """The class was deleted (``renamed_to``: by a rename, to that name)."""

        renamed_to: str | None

        def apply(self, aggregate: ResourceClass) -> None:
            aggregate.live = False

    def __init__(self, name: str) -> None:
        self.name = name
        self.live = True

    @classmethod
    def create(cls, name: str, request: RequestMeta) -> ResourceClass:
        """A new custom class (its stream does not exist yet)."""
        return cls._create(cls.Created, id=resource_class_stream_id(name), name=name,
                           request=request)

    def recreate(self, request: RequestMeta) -> None:
        """Create the class again after it was deleted."""
        if self.live:
            raise ResourceClassExists(self.name)
        self.trigger_event(self.Recreated, request=request)

    def delete(self, request: RequestMeta, renamed_to: str | None = None) -> None:
        """Delete the class (whoever calls this has checked no inventory uses it)."""
        if not self.live:
            raise ResourceClassNotFound(self.name)
        self.trigger_event(self.Deleted, request=request, renamed_to=renamed_to)


def check_custom(name: str) -> None:
    """Refuse a standard class where only a custom one may be created or deleted."""
    if name in STANDARD_RESOURCE_CLASSES or not name.startswith(CUSTOM_PREFIX):
        raise InvalidRequest(f"{name} is not a custom resource class (CUSTOM_*): standard "
                             "classes cannot be created, renamed or deleted",
                             resource_class=name)


class Classes(Protocol):
    """What a resource class decision asks of the store (the unit of work gives it)."""

    def resource_class(self, name: str) -> ResourceClass | None:
        """The class's aggregate, or ``None`` if its stream does not exist."""
        ...

    def add(self, aggregate: ResourceClass) -> None:
        """A new aggregate to save with the rest."""
        ...


def create(ws: Classes, name: str, request: RequestMeta, *, exist_ok: bool) -> None:
    """Create custom class ``name``; an existing one is :class:`ResourceClassExists`, or
    left as it is with ``exist_ok`` (Placement's ``PUT`` from 1.7)."""
    check_custom(name)
    found = ws.resource_class(name)
    if found is None:
        ws.add(ResourceClass.create(name, request))
    elif not found.live:
        found.recreate(request)
    elif not exist_ok:
        raise ResourceClassExists(name)


def delete(ws: Classes, name: str, request: RequestMeta) -> None:
    """Delete custom class ``name`` (:class:`ResourceClassNotFound` unless it exists)."""
    check_custom(name)
    found = ws.resource_class(name)
    if found is None:
        raise ResourceClassNotFound(name)
    found.delete(request)


def rename(ws: Classes, name: str, new_name: str, request: RequestMeta) -> None:
    """Rename custom class ``name`` to ``new_name`` in one append: the old name is deleted,
    the new one created (Placement before 1.7)."""
    check_custom(new_name)
    target = ws.resource_class(new_name)
    if target is not None and target.live:
        raise ResourceClassExists(new_name)
    delete_as = ws.resource_class(name)
    if delete_as is None:
        check_custom(name)
        raise ResourceClassNotFound(name)
    check_custom(name)
    delete_as.delete(request, renamed_to=new_name)
    create(ws, new_name, request, exist_ok=False)
