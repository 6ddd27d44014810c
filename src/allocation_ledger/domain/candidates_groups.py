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


def group_parts(cloud: CloudIndex, group: RequestGroup, roots: set[str] | None,
                class_exists: Exists, trait_exists: Exists) -> list[Part]:
    """Every part satisfying ``group`` whose anchor is in ``roots`` (any when ``None``),
    anchors in UUID order. Unknown classes and traits are refused in Placement's order:
    classes, then (unless no provider is in the ``member_of`` aggregates) traits."""
    for rc in group.resources:
        if not class_exists(rc):
            raise NoSuchResourceClass(rc)
    in_aggs = cloud.in_every(group.member_of) if group.member_of else None
    if in_aggs is not None and not in_aggs:
        return []
    check_traits(trait_exists, (*group.required, group.forbidden))
    tree_root = None
    if group.in_tree is not None:
        found = cloud.by_uuid.get(group.in_tree)
        if found is None:
            return []
        tree_root = found.root_uuid
    fit = {rc: cloud.fitting(rc, n, tree_root) for rc, n in group.resources.items()}
    if not all(fit.values()):
        return []
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
            roots: set[str] | None, in_aggs: set[str] | None, bad: set[str]) -> list[Part]:
    if group.resources:
        first, *others = fit.values()
        others_ok = [{s.uuid for s in f} for f in others]
        chosen = [s for s in first if all(s.uuid in ok for ok in others_ok)]
    elif group.required or in_aggs is not None:
        chosen = list(cloud.by_uuid.values())
    else:
        return []
    parts: list[Part] = []
    for s in sorted(chosen, key=lambda s: s.uuid):
        if not (has_required(s.traits, group.required) and group.forbidden.isdisjoint(s.traits)
                and (in_aggs is None or s.uuid in in_aggs) and s.uuid not in bad):
            continue
        resources = tuple((s.uuid, rc, n) for rc, n in group.resources.items())
        anchors = {s.root_uuid}
        if s.uuid in cloud.sharing:
            anchors |= cloud.anchors(s.uuid)
        parts.extend(Part(anchor, resources, (s.uuid,)) for anchor in sorted(anchors)
                     if roots is None or anchor in roots)
    return sorted(parts, key=lambda p: p.anchor)


def _spread(cloud: CloudIndex, group: RequestGroup, fit: dict[str, list[ProviderSnapshot]],
            roots: set[str] | None, in_aggs: set[str] | None, bad: set[str]) -> list[Part]:
    per_class: list[dict[str, list[str]]] = []  # class -> anchor -> providers
    common: set[str] | None = None
    for fitting in fit.values():
        pairs = {(s.uuid, s.root_uuid) for s in fitting}
        if group.in_tree is None:  # in_tree keeps the group inside that tree
            pairs |= {(s.uuid, anchor) for s in fitting if s.uuid in cloud.sharing
                      and (in_aggs is None or s.uuid in in_aggs)
                      for anchor in cloud.anchors(s.uuid)}
        by_anchor: dict[str, list[str]] = {}
        for rp, anchor in sorted(pairs):
            if ((roots is None or anchor in roots)
                    and (in_aggs is None or rp in in_aggs or anchor in in_aggs)
                    and rp not in bad and anchor not in bad):
                by_anchor.setdefault(anchor, []).append(rp)
        per_class.append(by_anchor)
        common = set(by_anchor) if common is None else common & set(by_anchor)
    classes = list(fit)
    parts: list[Part] = []
    for anchor in sorted(common or ()):
        for rps in itertools.product(*(c[anchor] for c in per_class)):
            traits = [cloud.by_uuid[rp].traits for rp in rps]
            if any(not group.forbidden.isdisjoint(t) for t in traits):
                continue
            if not has_required(frozenset().union(*traits), group.required):
                continue
            resources = tuple((rp, rc, group.resources[rc]) for rp, rc in
                              zip(rps, classes, strict=True))
            parts.append(Part(anchor, resources, tuple(sorted(set(rps)))))
    return parts
