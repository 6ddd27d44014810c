"""Each request group on its own: every way one group can be satisfied, per anchor tree.

A :class:`Part` is one way: the resources it takes, the providers it maps to and the
*anchor*, the root of the tree it is for (a sharing provider's part is offered once for each
tree in its aggregates). The search then combines one part of every group per anchor.

The two group kinds follow Placement 16 (``objects/allocation_candidate.py`` and
``research_context.py``):

- the unnumbered group is *spread*: each class from any provider of the anchor tree, or from
  a sharing provider of one of the tree's aggregates; ``required`` traits must be met by the
  providers of the part together, none of them may have a ``forbidden`` trait, and
  ``member_of`` / forbidden aggregates hold for a provider or for the anchor root;
- a granular group is taken from *one* provider, which alone has the traits, is in the
  aggregates and has room for every class. A granular group without resources (only with
  ``same_subtree``, 1.36) matches the providers that ``required`` / ``member_of`` name
  (without either, none), anywhere in the cloud, as Placement's does: ``in_tree`` only
  limits where resources come from.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

from allocation_ledger.domain.candidates_index import CloudIndex, has_required
from allocation_ledger.domain.candidates_request import (
    NoSuchResourceClass,
    NoSuchTraits,
    RequestGroup,
)

Exists = Callable[[str], bool]


@dataclass(frozen=True)
class Part:
    """One way to satisfy one group for one anchor tree."""

    anchor: str
    #: (provider, class, amount), no (provider, class) twice
    resources: tuple[tuple[str, str, int], ...]
    #: the providers this group maps to, sorted
    providers: tuple[str, ...]


class Options:
    """A group's parts by anchor, worked out for an anchor only when asked for, so a search
    that stops at its limit never builds the parts of the trees it does not reach."""

    def __init__(self, anchors: set[str] | None, build: Callable[[str], list[Part]],
                 every_root: Callable[[], list[str]] = list) -> None:
        #: the anchors that may have parts (``None``: any root of the cloud); a part's own
        #: checks may still rule one out
        self.anchors = anchors
        self._build = build
        self._every_root = every_root
        self._built: dict[str, list[Part]] = {}

    def parts(self, anchor: str) -> list[Part]:
        """The group's parts for ``anchor``, by provider UUID."""
        found = self._built.get(anchor)
        if found is None:
            possible = self.anchors is None or anchor in self.anchors
            found = self._built[anchor] = self._build(anchor) if possible else []
        return found

    def ordered(self) -> list[str]:
        """The anchors that may have parts, by UUID."""
        return self._every_root() if self.anchors is None else sorted(self.anchors)

    def any(self) -> bool:
        """True when some anchor has a part."""
        return any(self.parts(a) for a in self.ordered())


NONE = Options(set(), lambda anchor: [])


def group_options(cloud: CloudIndex, group: RequestGroup, roots: set[str] | None,
                  class_exists: Exists, trait_exists: Exists) -> Options:
    """The parts satisfying ``group`` whose anchor is in ``roots`` (any when ``None``).
    Unknown classes and traits are refused in Placement's order: classes, then (unless no
    provider is in the ``member_of`` aggregates) traits."""
    for rc in group.resources:
        if not class_exists(rc):
            raise NoSuchResourceClass(rc)
    in_aggs = cloud.in_every(group.member_of) if group.member_of else None
    if in_aggs is not None and not in_aggs:
        return NONE
    check_traits(trait_exists, (*group.required, group.forbidden))
    tree_root = None
    if group.in_tree is not None:
        found = cloud.by_uuid.get(group.in_tree)
        if found is None:
            return NONE
        tree_root = found.root_uuid
    if any(rc not in cloud.by_class for rc in group.resources):
        return NONE
    scope = _Scope(group, roots, in_aggs, cloud.in_any(group.forbidden_aggregates), tree_root)
    if group.use_same_provider:
        return _single(cloud, scope)
    return _spread(cloud, scope)


def check_traits(trait_exists: Exists, trait_sets: tuple[frozenset[str], ...]) -> None:
    """Refuse the first set with traits that do not exist (:class:`NoSuchTraits`)."""
    for names in trait_sets:
        missing = [t for t in names if not trait_exists(t)]
        if missing:
            raise NoSuchTraits(missing)


@dataclass(frozen=True)
class _Scope:
    """Where one group may take from: the request's anchor roots (``None``: any), the
    providers in its ``member_of`` aggregates (``None``: no ``member_of``), those in a
    forbidden aggregate, and the root of its ``in_tree`` (``None``: any tree)."""

    group: RequestGroup
    roots: set[str] | None
    in_aggs: set[str] | None
    bad: set[str]
    tree_root: str | None


def _single(cloud: CloudIndex, scope: _Scope) -> Options:
    group, in_aggs, bad = scope.group, scope.in_aggs, scope.bad
    if not (group.resources or group.required or in_aggs is not None):
        return NONE
    serving = _sharing_by_anchor(cloud, None)
    traits_asked = bool(group.required or group.forbidden)

    def fits(uuid: str) -> bool:
        s = cloud.by_uuid[uuid]
        if group.resources and (
                (scope.tree_root is not None and s.root_uuid != scope.tree_root)
                or not all(cloud.fits(rc, uuid, n) for rc, n in group.resources.items())):
            return False
        if traits_asked and not (has_required(s.traits, group.required)
                                 and group.forbidden.isdisjoint(s.traits)):
            return False
        return (in_aggs is None or uuid in in_aggs) and uuid not in bad

    def parts(anchor: str) -> list[Part]:
        found = sorted({*cloud.trees.get(anchor, ()), *serving.get(anchor, ())})
        return [Part(anchor, tuple((u, rc, n) for rc, n in group.resources.items()), (u,))
                for u in found if fits(u)]

    return Options(scope.roots, parts, cloud.roots)


def _spread(cloud: CloudIndex, scope: _Scope) -> Options:
    group, roots, in_aggs, bad = scope.group, scope.roots, scope.in_aggs, scope.bad
    # with in_tree, that tree alone, without sharing providers from elsewhere
    serving = _sharing_by_anchor(cloud, in_aggs) if scope.tree_root is None else {}
    classes = list(group.resources)
    amounts = [group.resources[rc] for rc in classes]
    checks_traits = bool(group.required or group.forbidden)

    def providers(anchor: str, rc: str, n: int) -> list[str]:
        found = {u for u in (*cloud.trees.get(anchor, ()), *serving.get(anchor, ()))
                 if cloud.fits(rc, u, n) and u not in bad
                 and (in_aggs is None or u in in_aggs or anchor in in_aggs)}
        return sorted(found)

    def parts(anchor: str) -> list[Part]:
        if anchor in bad or (scope.tree_root is not None and anchor != scope.tree_root):
            return []
        per_class = []
        for rc, n in zip(classes, amounts, strict=True):
            fitting = providers(anchor, rc, n)
            if not fitting:
                return []
            per_class.append(fitting)
        found = []
        for rps in itertools.product(*per_class):
            if checks_traits:
                traits = [cloud.by_uuid[rp].traits for rp in rps]
                if any(not group.forbidden.isdisjoint(t) for t in traits):
                    continue
                if not has_required(frozenset().union(*traits), group.required):
                    continue
            resources = tuple(zip(rps, classes, amounts, strict=True))
            found.append(Part(anchor, resources, tuple(sorted(set(rps)))))
        return found

    anchors = roots
    if scope.tree_root is not None:
        anchors = {scope.tree_root} if roots is None else roots & {scope.tree_root}
    return Options(anchors, parts, cloud.roots)


def _sharing_by_anchor(cloud: CloudIndex, in_aggs: set[str] | None) -> dict[str, list[str]]:
    """The sharing providers (of those in ``in_aggs`` when given) that can serve each
    anchor root other than their own."""
    found: dict[str, list[str]] = {}
    for uuid in cloud.sharing:
        if in_aggs is None or uuid in in_aggs:
            for anchor in cloud.anchors(uuid):
                found.setdefault(anchor, []).append(uuid)
    return found
