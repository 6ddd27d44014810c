"""The cloud as a candidates search reads it: providers indexed by UUID, resource class,
aggregate and tree, built once per search in one pass over the snapshots.

Every question the search asks is answered from these indexes in time proportional to the
providers that hold the class, trait or aggregate asked about, never by comparing trees
pairwise.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from allocation_ledger.domain.candidates_request import SHARING_TRAIT, ProviderSnapshot


class CloudIndex:
    """Live providers by UUID, by class they have inventory of, by aggregate, by tree."""

    def __init__(self, snapshots: Iterable[ProviderSnapshot]) -> None:
        self.by_uuid: dict[str, ProviderSnapshot] = {}
        #: class -> (provider, min_unit, max_unit, step_size, capacity left) of every provider
        #: with an inventory of the class, so a fit is a few comparisons
        self.by_class: dict[str, list[tuple[ProviderSnapshot, int, int, int, int]]] = \
            defaultdict(list)
        self.members: dict[str, list[str]] = defaultdict(list)
        self.trees: dict[str, list[str]] = defaultdict(list)
        self.sharing: set[str] = set()
        #: True when some provider has a parent (Placement's "nested providers in use")
        self.has_trees = False
        self._anchors: dict[str, frozenset[str]] = {}
        for s in snapshots:
            self.by_uuid[s.uuid] = s
            usages = s.usages
            for rc, inv in s.inventories.items():
                self.by_class[rc].append((s, inv.min_unit, inv.max_unit, inv.step_size,
                                          inv.capacity - usages.get(rc, 0)))
            for agg in s.aggregates:
                self.members[agg].append(s.uuid)
            self.trees[s.root_uuid].append(s.uuid)
            if SHARING_TRAIT in s.traits:
                self.sharing.add(s.uuid)
            if s.parent_uuid is not None:
                self.has_trees = True

    def fitting(self, rc: str, amount: int, tree_root: str | None) -> list[ProviderSnapshot]:
        """Providers (of the tree of ``tree_root`` when given) that could take ``amount`` of
        ``rc`` on their own: ``rules.unit_problem``'s min/max/step rules, and ``used +
        amount`` within capacity, as comparisons over the rows the index keeps."""
        return [s for s, lo, hi, step, left in self.by_class.get(rc, ())
                if lo <= amount <= hi and amount <= left and not amount % step
                and (tree_root is None or s.root_uuid == tree_root)]

    def in_every(self, member_of: tuple[frozenset[str], ...]) -> set[str]:
        """Providers that are in at least one aggregate of every set of ``member_of``."""
        found: set[str] | None = None
        for any_of in member_of:
            these = {u for agg in any_of for u in self.members.get(agg, ())}
            found = these if found is None else found & these
        return found or set()

    def in_any(self, aggregates: Iterable[str]) -> set[str]:
        """Providers in at least one of ``aggregates``."""
        return {u for agg in aggregates for u in self.members.get(agg, ())}

    def anchors(self, sharing_uuid: str) -> frozenset[str]:
        """The roots of every tree with a provider in an aggregate of the sharing provider
        (its own tree included when it is in an aggregate): the trees it can serve."""
        found = self._anchors.get(sharing_uuid)
        if found is None:
            s = self.by_uuid[sharing_uuid]
            found = frozenset(self.by_uuid[m].root_uuid
                              for agg in s.aggregates for m in self.members[agg])
            self._anchors[sharing_uuid] = found
        return found

    def ancestry(self, uuid: str) -> set[str]:
        """The provider and every provider above it."""
        found = {uuid}
        parent = self.by_uuid[uuid].parent_uuid
        while parent is not None:
            found.add(parent)
            parent = self.by_uuid[parent].parent_uuid
        return found


def has_required(traits: frozenset[str] | set[str],
                 required: tuple[frozenset[str], ...]) -> bool:
    """True when ``traits`` meet every any-of set of ``required``."""
    return all(not any_of.isdisjoint(traits) for any_of in required)
