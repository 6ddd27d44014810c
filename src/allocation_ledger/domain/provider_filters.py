"""Which providers a listing keeps: Placement's filters of ``GET /resource_providers``.

Pure rules over snapshots of providers (:class:`ProviderFacts`), combined as Placement
combines them: every filter given must hold (AND). Within ``required`` each group is
any-of (a plain trait is a group of one; ``in:A,B`` a group of two), within ``member_of``
likewise (each ``member_of`` parameter is a group; ``in:`` lists its members); forbidden
traits and forbidden aggregates exclude a provider that has any of them. Every filter looks
at the provider itself, never at its tree, except ``in_tree``, which keeps the providers of
the named provider's tree. ``resources`` keeps a provider with an inventory of every class
named whose capacity left takes the amount, and whose ``min_unit``, ``max_unit`` and
``step_size`` allow it as one allocation (Placement's ``_capacity_check_clause``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from allocation_ledger.domain.values import Inventory


@dataclass(frozen=True)
class Room:
    """One class on one provider: its inventory and what is used of it."""

    inventory: Inventory
    used: int

    def takes(self, amount: int) -> bool:
        """True when one allocation of ``amount`` fits, by capacity and unit rules."""
        inv = self.inventory
        return (self.used + amount <= inv.capacity and inv.min_unit <= amount <= inv.max_unit
                and amount % inv.step_size == 0)


@dataclass(frozen=True)
class ProviderFacts:
    """What the filters look at of one provider."""

    uuid: str
    root_uuid: str
    traits: frozenset[str] = frozenset()
    aggregates: frozenset[str] = frozenset()
    rooms: Mapping[str, Room] = field(default_factory=dict)


@dataclass(frozen=True)
class ProviderFilter:
    """A listing's filters; empty ones keep everything."""

    #: groups of traits: a provider has at least one of each group
    required: tuple[frozenset[str], ...] = ()
    #: traits a provider must not have
    forbidden: frozenset[str] = frozenset()
    #: groups of aggregate UUIDs: a provider is in at least one of each group
    member_of: tuple[frozenset[str], ...] = ()
    #: aggregates a provider must not be in
    not_member_of: frozenset[str] = frozenset()
    #: a provider UUID: keep only its tree (nothing if it does not exist)
    in_tree: str | None = None
    #: class -> amount a provider must have room for
    resources: Mapping[str, int] = field(default_factory=dict)

    @property
    def traits_named(self) -> set[str]:
        """Every trait the filter names (each must exist)."""
        return set().union(*self.required, self.forbidden)

    def keeps(self, provider: ProviderFacts, tree_root: str | None) -> bool:
        """True when ``provider`` passes every filter (``tree_root``: the root of the
        ``in_tree`` provider, if it was asked for and exists)."""
        if self.in_tree is not None and provider.root_uuid != tree_root:
            return False
        if any(not group & provider.traits for group in self.required):
            return False
        if self.forbidden & provider.traits:
            return False
        if any(not group & provider.aggregates for group in self.member_of):
            return False
        if self.not_member_of & provider.aggregates:
            return False
        for rc, amount in self.resources.items():
            room = provider.rooms.get(rc)
            if room is None or not room.takes(amount):
                return False
        return True


def select_providers(providers: Iterable[ProviderFacts],
                     wanted: ProviderFilter) -> list[ProviderFacts]:
    """The providers ``wanted`` keeps, in the order given."""
    listed = list(providers)
    tree_root = None
    if wanted.in_tree is not None:
        tree_root = next((p.root_uuid for p in listed if p.uuid == wanted.in_tree), None)
        if tree_root is None:
            return []  # Placement: an unknown in_tree provider lists nothing
    return [p for p in listed if wanted.keeps(p, tree_root)]
