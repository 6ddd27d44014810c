"""The cloud as a candidates search reads it: providers indexed by UUID, resource class,
aggregate and tree, built once per search in one pass over the snapshots.

Every question the search asks is answered from these indexes in time proportional to the
providers that hold the class, trait or aggregate asked about, never by comparing trees
pairwise.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import TypeVar

from allocation_ledger.domain.candidates_request import (
    SHARING_TRAIT,
    ProviderSnapshot,
    ProviderSummary,
    SummaryResource,
)

V = TypeVar("V")


class CloudIndex:
    """Live providers by UUID, by class they have inventory of, by aggregate, by tree.

    Built from snapshots, then kept current one provider at a time (:meth:`put`,
    :meth:`drop`). The search's answers do not depend on the order providers came in.
    """

    def __init__(self, snapshots: Iterable[ProviderSnapshot] = ()) -> None:
        self.by_uuid: dict[str, ProviderSnapshot] = {}
        #: class -> provider -> (provider, min_unit, max_unit, step_size, capacity left), so a
        #: fit is a few comparisons
        self.by_class: dict[str, dict[str, tuple[ProviderSnapshot, int, int, int, int]]] = \
            defaultdict(dict)
        self.members: dict[str, dict[str, None]] = defaultdict(dict)
        self.trees: dict[str, dict[str, None]] = defaultdict(dict)
        self.sharing: set[str] = set()
        self._children: set[str] = set()
        self._anchors: dict[str, frozenset[str]] = {}
        self._roots: list[str] | None = None
        self._summaries: dict[str, ProviderSummary] = {}
        for s in snapshots:
            self.put(s)

    @property
    def has_trees(self) -> bool:
        """True when some provider has a parent (Placement's "nested providers in use")."""
        return bool(self._children)

    def put(self, s: ProviderSnapshot) -> None:
        """Add a provider, or replace what the index holds of it."""
        if s.uuid in self.by_uuid:
            self.drop(s.uuid)
        self._summaries.pop(s.uuid, None)
        self.by_uuid[s.uuid] = s
        usages = s.usages
        for rc, inv in s.inventories.items():
            self.by_class[rc][s.uuid] = (s, inv.min_unit, inv.max_unit, inv.step_size,
                                         inv.capacity - usages.get(rc, 0))
        for agg in s.aggregates:
            self.members[agg][s.uuid] = None
        if s.root_uuid not in self.trees:
            self._roots = None
        self.trees[s.root_uuid][s.uuid] = None
        if SHARING_TRAIT in s.traits:
            self.sharing.add(s.uuid)
        if s.parent_uuid is not None:
            self._children.add(s.uuid)
        if s.aggregates:
            self._anchors.clear()

    def drop(self, uuid: str) -> None:
        """Forget a provider (deleted); nothing when the index does not hold it."""
        s = self.by_uuid.pop(uuid, None)
        self._summaries.pop(uuid, None)
        if s is None:
            return
        for rc in s.inventories:
            _discard(self.by_class, rc, uuid)
        for agg in s.aggregates:
            _discard(self.members, agg, uuid)
        _discard(self.trees, s.root_uuid, uuid)
        if s.root_uuid not in self.trees:
            self._roots = None
        self.sharing.discard(uuid)
        self._children.discard(uuid)
        if s.aggregates:
            self._anchors.clear()

    def fits(self, rc: str, uuid: str, amount: int) -> bool:
        """True when provider ``uuid`` could take ``amount`` of ``rc`` on its own:
        ``rules.unit_problem``'s min/max/step rules, and ``used + amount`` within capacity,
        as comparisons over the row the index keeps."""
        row = self.by_class.get(rc, {}).get(uuid)
        if row is None:
            return False
        _, lo, hi, step, left = row
        return lo <= amount <= hi and amount <= left and not amount % step

    def roots(self) -> list[str]:
        """The roots of every tree, by UUID (kept between calls until a tree comes or
        goes)."""
        if self._roots is None:
            self._roots = sorted(self.trees)
        return self._roots

    def summary(self, uuid: str) -> ProviderSummary:
        """Provider ``uuid`` as a candidates answer summarises it (kept until it changes)."""
        found = self._summaries.get(uuid)
        if found is None:
            found = self._summaries[uuid] = summary(self.by_uuid[uuid])
        return found

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


def _discard(index: dict[str, dict[str, V]], key: str, uuid: str) -> None:
    found = index.get(key)
    if found is not None:
        found.pop(uuid, None)
        if not found:
            del index[key]


def summary(s: ProviderSnapshot) -> ProviderSummary:
    """A provider as a candidates answer summarises it."""
    usages = s.usages
    resources = {rc: SummaryResource(inv.capacity, usages.get(rc, 0))
                 for rc, inv in s.inventories.items()}
    return ProviderSummary(s.uuid, s.parent_uuid, s.root_uuid, resources, tuple(sorted(s.traits)))


def has_required(traits: frozenset[str] | set[str],
                 required: tuple[frozenset[str], ...]) -> bool:
    """True when ``traits`` meet every any-of set of ``required``."""
    return all(not any_of.isdisjoint(traits) for any_of in required)
