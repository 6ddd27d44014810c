"""Allocation candidates: ``GET /allocation_candidates`` as a pure function of the cloud.

:func:`search` takes provider snapshots and a parsed request and answers what Placement 16
answers for the same cloud: every way to satisfy all the request's groups from one tree
(plus the sharing providers of its aggregates), and a summary of every provider of the
trees those candidates take from.

How it is computed, as Placement's ``objects/allocation_candidate.py`` does:

1. ``root_required`` (1.35) picks the roots a candidate may be anchored at.
2. Each group on its own (``candidates_groups.group_parts``): its parts per anchor tree.
   A group with no part ends the search with no candidates.
3. For each anchor that every group has parts for, one part of each group, combined:
   ``group_policy=isolate`` wants the granular groups on distinct providers,
   ``same_subtree`` wants one provider of each listed set of groups to be the ancestor (or
   itself) of all the others, and amounts of one class on one provider, added up over the
   groups, must fit: ``used + sum <= capacity`` and ``sum <= max_unit``. Equal candidates
   (same allocations and mappings) are answered once.
4. Before 1.29 (``nested_aware`` False) and when some provider has a parent, candidates
   taking from two providers of one tree are dropped, and only their providers summarised.
5. ``limit`` keeps the first N.

**Order.** Placement answers in the order of Python's set iteration (or randomly with
``[placement] randomize_allocation_candidates``); the ledger answers in a stable order:
anchor roots by UUID; within one, the groups' parts in query order, each group's parts by
provider UUID (the first group varying slowest). ``limit`` keeps the first N of that order,
and the search stops once it has them.

**Where the ledger is right and Placement 16 is not** (documented differences):

- When one resource class is asked by two or more groups and ``group_policy`` is not
  ``none`` (``isolate``, or not given), Placement adds the amounts onto objects shared
  between candidates (``copy_arr_if_needed`` copies only for ``none``), so amounts pile up
  across candidates (``MEMORY_MB: 33280`` for 512 + 4096) and which candidates survive
  depends on the process's hash seed. The ledger adds each candidate's own amounts.
- When a sharing provider alone satisfies the whole unnumbered group, Placement keeps that
  part for one anchor tree only (its set of parts compares them without the anchor), chosen
  by set order, so granular groups on the other trees of the aggregate find nothing. The
  ledger keeps the part for every anchor tree.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator

from allocation_ledger.domain.candidates_groups import (
    Exists,
    Options,
    Part,
    check_traits,
    group_options,
)
from allocation_ledger.domain.candidates_index import CloudIndex
from allocation_ledger.domain.candidates_request import (
    AllocationRequest,
    Candidates,
    CandidatesRequest,
    ProviderSnapshot,
    ProviderSummary,
)

Key = tuple[frozenset[tuple[str, str, int]], frozenset[tuple[str, tuple[str, ...]]]]


def search(snapshots: Iterable[ProviderSnapshot], request: CandidatesRequest, *,
           class_exists: Exists, trait_exists: Exists) -> Candidates:
    """The allocation candidates of ``request`` in the cloud of ``snapshots`` (every live
    provider). ``class_exists`` / ``trait_exists`` say which names exist: an unknown one is
    refused with ``NoSuchResourceClass`` / ``NoSuchTraits``, at the point Placement
    refuses it."""
    return search_index(CloudIndex(snapshots), request, class_exists=class_exists,
                        trait_exists=trait_exists)


def search_index(cloud: CloudIndex, request: CandidatesRequest, *, class_exists: Exists,
                 trait_exists: Exists) -> Candidates:
    """:func:`search` over an index already built (the search only reads it: one index,
    kept current with ``put`` / ``drop``, answers request after request)."""
    if not request.groups:
        return Candidates()
    roots = _anchor_roots(cloud, request, trait_exists)
    if roots is not None and not roots:
        return Candidates()
    parts: list[Options] = []
    for group in request.groups:
        found = group_options(cloud, group, roots, class_exists, trait_exists)
        if not found.any():
            return Candidates()
        parts.append(found)
    old_and_nested = not request.nested_aware and cloud.has_trees
    limit = None if old_and_nested else request.limit
    chosen = list(itertools.islice(_combined(cloud, request, parts), limit))
    if old_and_nested:
        return _flat_answer(cloud, chosen, request.limit)
    return Candidates(tuple(chosen), _summaries(cloud, _trees(cloud, chosen)))


def _anchor_roots(cloud: CloudIndex, request: CandidatesRequest,
                  trait_exists: Exists) -> set[str] | None:
    """The roots ``root_required`` allows (``None``: any)."""
    required, forbidden = request.root_required, request.root_forbidden
    if not (required or forbidden):
        return None
    check_traits(trait_exists, (required, forbidden))
    return {s.uuid for s in cloud.by_uuid.values() if s.parent_uuid is None
            and required <= s.traits and forbidden.isdisjoint(s.traits)}


def _combined(cloud: CloudIndex, request: CandidatesRequest,
              parts: list[Options]) -> Iterator[AllocationRequest]:
    """Every valid combination of one part per group, per anchor, once each."""
    known = [p.anchors for p in parts if p.anchors is not None]
    anchors = sorted(set.intersection(*known)) if known else parts[0].ordered()
    granular = [g.use_same_provider for g in request.groups]
    isolate = request.group_policy == "isolate"
    seen: set[Key] = set()
    for anchor in anchors:
        lists = _parts_of(parts, anchor)
        if lists is None:
            continue
        for combo in _product(cloud, lists, granular if isolate else None):
            if not _same_subtrees(cloud, request, combo):
                continue
            areq, key = _consolidated(request, combo)
            if key not in seen:
                seen.add(key)
                yield areq


def _parts_of(parts: list[Options], anchor: str) -> list[list[Part]] | None:
    """Every group's parts for ``anchor``, or ``None`` as soon as one group has none."""
    lists = []
    for options in parts:
        found = options.parts(anchor)
        if not found:
            return None
        lists.append(found)
    return lists


def _product(cloud: CloudIndex, lists: list[list[Part]],
             granular: list[bool] | None) -> Iterator[tuple[Part, ...]]:
    """The product of ``lists``, pruned as it is built: a prefix whose amounts exceed a
    provider's room, or (``granular`` given: isolate) puts two granular groups on one
    provider, is not extended."""
    taken: dict[tuple[str, str], int] = {}
    used_by_granular: set[str] = set()
    chosen: list[Part] = []

    def extend(i: int) -> Iterator[tuple[Part, ...]]:
        if i == len(lists):
            yield tuple(chosen)
            return
        for part in lists[i]:
            isolated = granular is not None and granular[i]
            if isolated and part.providers[0] in used_by_granular:
                continue
            if not _room_for(cloud, taken, part):
                continue
            for rp, rc, n in part.resources:
                taken[rp, rc] = taken.get((rp, rc), 0) + n
            if isolated:
                used_by_granular.add(part.providers[0])
            chosen.append(part)
            yield from extend(i + 1)
            chosen.pop()
            if isolated:
                used_by_granular.discard(part.providers[0])
            for rp, rc, n in part.resources:
                taken[rp, rc] -= n

    yield from extend(0)


def _room_for(cloud: CloudIndex, taken: dict[tuple[str, str], int], part: Part) -> bool:
    """True when adding ``part`` to what the other groups ``taken`` still fits."""
    for rp, rc, n in part.resources:
        before = taken.get((rp, rc), 0)
        if not before:
            continue  # the group's own check already found room for n alone
        s = cloud.by_uuid[rp]
        inv = s.inventories[rc]
        total = before + n
        if total > inv.max_unit or s.used(rc) + total > inv.capacity:
            return False
    return True


def _same_subtrees(cloud: CloudIndex, request: CandidatesRequest,
                   combo: tuple[Part, ...]) -> bool:
    if not request.same_subtrees:
        return True
    by_suffix = {g.suffix: p.providers for g, p in zip(request.groups, combo, strict=True)}
    for suffixes in request.same_subtrees:
        rps = {rp for suffix in suffixes for rp in by_suffix.get(suffix, ())}
        if len(rps) <= 1:
            continue
        common = set.intersection(*(cloud.ancestry(rp) for rp in rps))
        if common.isdisjoint(rps):
            return False
    return True


def _consolidated(request: CandidatesRequest,
                  combo: tuple[Part, ...]) -> tuple[AllocationRequest, Key]:
    allocations: dict[str, dict[str, int]] = {}
    mappings: dict[str, tuple[str, ...]] = {}
    for group, part in zip(request.groups, combo, strict=True):
        for rp, rc, n in part.resources:
            on_rp = allocations.setdefault(rp, {})
            on_rp[rc] = on_rp.get(rc, 0) + n
        known = mappings.get(group.suffix)
        mappings[group.suffix] = part.providers if known is None else tuple(
            sorted({*known, *part.providers}))
    key = (frozenset((rp, rc, n) for rp, res in allocations.items() for rc, n in res.items()),
           frozenset(mappings.items()))
    return AllocationRequest(allocations, mappings), key


def _trees(cloud: CloudIndex, areqs: list[AllocationRequest]) -> list[str]:
    """The roots of the trees the candidates take resources from."""
    return sorted({cloud.by_uuid[rp].root_uuid for a in areqs for rp in a.allocations})


def _summaries(cloud: CloudIndex, roots: list[str],
               only: set[str] | None = None) -> tuple[ProviderSummary, ...]:
    """Every provider of the trees of ``roots`` (of ``only`` among them when given), each
    tree's root first, then its others by UUID."""
    found: list[ProviderSummary] = []
    for root in roots:
        for uuid in sorted(cloud.trees[root], key=lambda u: (u != root, u)):
            if only is None or uuid in only:
                found.append(cloud.summary(uuid))
    return tuple(found)


def _flat_answer(cloud: CloudIndex, areqs: list[AllocationRequest],
                 limit: int | None) -> Candidates:
    """Before 1.29 with nested providers: no candidate takes from two providers of one
    tree; only the providers of the candidates are summarised (and, with a limit that cuts,
    only those of the trees the kept candidates take from), as Placement does."""
    kept = [a for a in areqs
            if len(a.allocations) == len({cloud.by_uuid[rp].root_uuid for rp in a.allocations})]
    providers = {rp for a in kept for rp in a.allocations}
    roots = _trees(cloud, kept)
    if limit is not None and limit < len(kept):
        kept = kept[:limit]
        roots = _trees(cloud, kept)
    return Candidates(tuple(kept), _summaries(cloud, roots, providers))
