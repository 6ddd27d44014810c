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
    ProviderSnapshot,
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

    def __init__(self, anchors: set[str], build: Callable[[str], list[Part]]) -> None:
        #: the anchors that may have parts (a part's own checks may still rule one out)
        self.anchors = anchors
        self._build = build
        self._built: dict[str, list[Part]] = {}

    def parts(self, anchor: str) -> list[Part]:
        """The group's parts for ``anchor``, by provider UUID."""
        found = self._built.get(anchor)
        if found is None:
            found = self._built[anchor] = self._build(anchor) if anchor in self.anchors else []
        return found

    def any(self) -> bool:
        """True when some anchor has a part."""
        return any(self.parts(a) for a in sorted(self.anchors))


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
    fit = {rc: cloud.fitting(rc, n, tree_root) for rc, n in group.resources.items()}
    if not all(fit.values()):
        return NONE
    bad = cloud.in_any(group.forbidden_aggregates)
    if group.use_same_provider:
        return _single(cloud, group, fit, roots, in_aggs, bad)
    return _spread(cloud, group, fit, roots, in_aggs, bad)


def check_traits(trait_exists: Exists, trait_sets: tuple[frozenset[str], ...]) -> None:
    """Refuse the first set with traits that do not exist (:class:`NoSuchTraits`)."""
    for names in trait_sets:
        missing = [t for t in names if not trait_exists(t)]
        if missing:
            raise NoSuchTraits(missing)


def _single(cloud: CloudIndex, group: RequestGroup, fit: dict[str, list[ProviderSnapshot]],
            roots: set[str] | None, in_aggs: set[str] | None, bad: set[str]) -> Options:
    if group.resources:
        first, *others = fit.values()
        ok = set.intersection(*({s.uuid for s in f} for f in others)) if others else None
        chosen = [s for s in first if ok is None or s.uuid in ok]
    elif group.required or in_aggs is not None:
        chosen = list(cloud.by_uuid.values())
    else:
        return NONE
    by_anchor: dict[str, list[ProviderSnapshot]] = {}
    traits_asked = bool(group.required or group.forbidden)
    for s in chosen:
        if traits_asked and not (has_required(s.traits, group.required)
                                 and group.forbidden.isdisjoint(s.traits)):
            continue
        if (in_aggs is not None and s.uuid not in in_aggs) or s.uuid in bad:
            continue
        anchors = cloud.anchors(s.uuid) | {s.root_uuid} if s.uuid in cloud.sharing \
            else (s.root_uuid,)
        for anchor in anchors:
            if roots is None or anchor in roots:
                by_anchor.setdefault(anchor, []).append(s)

    def parts(anchor: str) -> list[Part]:
        return [Part(anchor, tuple((s.uuid, rc, n) for rc, n in group.resources.items()),
                     (s.uuid,)) for s in sorted(by_anchor[anchor], key=lambda s: s.uuid)]

    return Options(set(by_anchor), parts)


def _spread(cloud: CloudIndex, group: RequestGroup, fit: dict[str, list[ProviderSnapshot]],
            roots: set[str] | None, in_aggs: set[str] | None, bad: set[str]) -> Options:
    per_class: list[dict[str, dict[str, None]]] = []  # class -> anchor -> providers
    for fitting in fit.values():
        by_anchor: dict[str, dict[str, None]] = {}
        for s in fitting:
            anchors = [s.root_uuid]
            if group.in_tree is None and s.uuid in cloud.sharing and (
                    in_aggs is None or s.uuid in in_aggs):  # in_tree: that tree alone
                anchors += cloud.anchors(s.uuid)
            for anchor in anchors:
                if ((roots is None or anchor in roots)
                        and (in_aggs is None or s.uuid in in_aggs or anchor in in_aggs)
                        and s.uuid not in bad and anchor not in bad):
                    by_anchor.setdefault(anchor, {})[s.uuid] = None
        per_class.append(by_anchor)
    common = set(per_class[0]).intersection(*per_class[1:])
    classes = list(fit)
    amounts = [group.resources[rc] for rc in classes]
    checks_traits = bool(group.required or group.forbidden)

    def parts(anchor: str) -> list[Part]:
        found = []
        for rps in itertools.product(*(sorted(c[anchor]) for c in per_class)):
            if checks_traits:
                traits = [cloud.by_uuid[rp].traits for rp in rps]
                if any(not group.forbidden.isdisjoint(t) for t in traits):
                    continue
                if not has_required(frozenset().union(*traits), group.required):
                    continue
            resources = tuple(zip(rps, classes, amounts, strict=True))
            found.append(Part(anchor, resources, tuple(sorted(set(rps)))))
        return found

    return Options(common, parts)
