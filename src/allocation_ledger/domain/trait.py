"""Traits: the standard ones (os-traits' list, as Placement's) and the custom ones, each a
stream of its own.

A custom trait (``CUSTOM_[A-Z0-9_]+``, at most 255 characters) is created, deleted and may
be created again: its stream is ``trait_stream_id(name)`` and a second creation appends
:class:`Trait.Recreated` to it, so its whole life is one history. Standard traits have no
stream: they exist because os-traits lists them, and cannot be deleted. Which traits a
provider has is the provider's own state (``Provider.TraitsSet``).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from functools import lru_cache

from eventsourcing.domain import Aggregate

from allocation_ledger.domain.errors import InvalidRequest, StandardTrait, TraitInUse
from allocation_ledger.domain.ids import trait_stream_id
from allocation_ledger.domain.values import PlainState, RequestMeta

CUSTOM_PREFIX = "CUSTOM_"
CUSTOM_TRAIT = re.compile(r"CUSTOM_[A-Z0-9_]+")
MAX_TRAIT_LENGTH = 255
#: Placement's words for a name ``PUT /traits/{name}`` refuses.
INVALID_CUSTOM = ('The trait is invalid. A valid trait must be no longer than 255 characters, '
                  'start with the prefix "CUSTOM_" and use following characters: "A"-"Z", '
                  '"0"-"9" and "_"')


@lru_cache(maxsize=1)
def standard_traits() -> frozenset[str]:
    """Every standard trait: os-traits' list, the library Placement syncs its own from (read
    once, on first use: the library walks its modules when imported)."""
    import os_traits

    return frozenset(os_traits.get_traits())


def is_custom_name(name: object) -> bool:
    """True for a well-formed custom trait name (whether or not it exists)."""
    return (isinstance(name, str) and len(name) <= MAX_TRAIT_LENGTH
            and CUSTOM_TRAIT.fullmatch(name) is not None)


def check_custom_name(name: str) -> str:
    """``name`` if it is a well-formed custom trait name, else :class:`InvalidRequest`."""
    if not is_custom_name(name):
        raise InvalidRequest(f"{INVALID_CUSTOM} (got {name!r:.80})", name=name)
    return name


def unknown(names: Iterable[str], custom: Collection[str]) -> list[str]:
    """The ``names`` that are neither standard nor among the existing ``custom`` traits."""
    standard = standard_traits()
    return sorted({n for n in names if n not in standard and n not in custom})


def select(names: Iterable[str], *, name_in: Collection[str] | None = None,
           prefix: str | None = None, associated: Collection[str] | None = None,
           associated_wanted: bool | None = None) -> list[str]:
    """The traits of ``names`` a listing keeps, sorted: those in ``name_in``, starting with
    ``prefix``, and (``associated_wanted``) held by some provider or (``False``) by none, as
    Placement's ``GET /traits`` filters them."""
    held = set(associated or ())
    kept = []
    for name in names:
        if name_in is not None and name not in name_in:
            continue
        if prefix is not None and not name.startswith(prefix):
            continue
        if associated_wanted is not None and (name in held) != associated_wanted:
            continue
        kept.append(name)
    return sorted(kept)


class Trait(PlainState, Aggregate):
    """A custom trait: created, deleted, perhaps created again, on one stream."""

    shares_containers = True

    class Event(Aggregate.Event):
        """Base of every trait event; ``request`` says who asked and why."""

        request: RequestMeta

    class Created(Event, Aggregate.Created):
        """The custom trait ``name`` was created."""

        name: str

    class Deleted(Event):
        """The custom trait was deleted (no provider had it)."""

        def apply(self, aggregate: Trait) -> None:
            aggregate.deleted = True

    class Recreated(Event):
        """The custom trait was created again after it had been deleted."""

        def apply(self, aggregate: Trait) -> None:
            aggregate.deleted = False

    def __init__(self, name: str) -> None:
        self.name = name
        self.deleted = False

    @classmethod
    def create(cls, name: str, request: RequestMeta) -> Trait:
        """A new custom trait (its name checked)."""
        return cls._create(cls.Created, id=trait_stream_id(check_custom_name(name)),
                           name=name, request=request)

    @property
    def exists(self) -> bool:
        """True unless the trait was deleted (and not created again)."""
        return not self.deleted

    def create_again(self, request: RequestMeta) -> None:
        """Create the deleted trait again, on its own stream."""
        if not self.deleted:
            raise InvalidRequest(f"trait {self.name} exists", name=self.name)
        self.trigger_event(self.Recreated, request=request)

    def delete(self, holders: list[str], request: RequestMeta) -> None:
        """Delete the trait; :class:`TraitInUse` while providers (``holders``) have it."""
        if holders:
            raise TraitInUse(self.name, sorted(holders))
        self.trigger_event(self.Deleted, request=request)


def check_deletable(name: str) -> None:
    """:class:`StandardTrait` for a standard trait (Placement: 400 before anything else)."""
    if not name.startswith(CUSTOM_PREFIX) and name in standard_traits():
        raise StandardTrait(name)
