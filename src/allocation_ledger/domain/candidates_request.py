"""What an allocation-candidates search reads and answers, as frozen values.

The search (``domain/candidates.py``) is a pure function of two inputs, both defined here:

- :class:`ProviderSnapshot`: one live provider as the search sees it (place in its tree,
  inventories, usage, traits, aggregates);
- :class:`CandidatesRequest`: the parsed ``GET /allocation_candidates`` query, one
  :class:`RequestGroup` per suffix (``""`` for the unnumbered group) and the request-wide
  parameters.

It answers :class:`Candidates`: allocation requests (allocations by provider and the
providers that satisfied each group) and provider summaries, as Placement computes them,
before any microversion shaping (which is the HTTP layer's).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from allocation_ledger.domain.errors import InvalidRequest
from allocation_ledger.domain.values import Inventory

#: The trait that makes a provider's inventory usable by every tree in its aggregates.
SHARING_TRAIT = "MISC_SHARES_VIA_AGGREGATE"

GroupPolicy = Literal["none", "isolate"]


@dataclass(frozen=True)
class ProviderSnapshot:
    """One live provider at one moment: what the candidates search needs of it."""

    uuid: str
    name: str
    parent_uuid: str | None
    root_uuid: str
    generation: int
    inventories: dict[str, Inventory]
    usages: dict[str, int]
    traits: frozenset[str] = frozenset()
    aggregates: frozenset[str] = frozenset()

    def used(self, resource_class: str) -> int:
        """The amount of ``resource_class`` in use (0 when none)."""
        return self.usages.get(resource_class, 0)


@dataclass(frozen=True)
class RequestGroup:
    """One request group: ``resources``, ``required``, ``member_of``, ``in_tree`` with one
    suffix. The unnumbered group (suffix ``""``) may be spread across a tree and sharing
    providers; every suffixed (granular) group must be satisfied by one provider.

    ``required`` is a conjunction of any-of sets (``required=A,B&required=in:C,D`` is
    ``({A}, {B}, {C, D})``); ``member_of`` likewise of aggregate sets.
    """

    suffix: str = ""
    resources: dict[str, int] = field(default_factory=dict)
    required: tuple[frozenset[str], ...] = ()
    forbidden: frozenset[str] = frozenset()
    member_of: tuple[frozenset[str], ...] = ()
    forbidden_aggregates: frozenset[str] = frozenset()
    in_tree: str | None = None

    @property
    def use_same_provider(self) -> bool:
        """True for a granular group: all of it from a single provider."""
        return self.suffix != ""


@dataclass(frozen=True)
class CandidatesRequest:
    """A whole request: its groups in query order and the request-wide parameters.

    ``group_policy`` is ``None`` when not given (allowed with at most one granular group).
    ``nested_aware`` is False before microversion 1.29: then no candidate may take from two
    providers of one tree.
    """

    groups: tuple[RequestGroup, ...]
    group_policy: GroupPolicy | None = None
    same_subtrees: tuple[frozenset[str], ...] = ()
    root_required: frozenset[str] = frozenset()
    root_forbidden: frozenset[str] = frozenset()
    limit: int | None = None
    nested_aware: bool = True


@dataclass(frozen=True)
class AllocationRequest:
    """One candidate: provider -> class -> amount, and group suffix -> providers used."""

    allocations: dict[str, dict[str, int]]
    mappings: dict[str, tuple[str, ...]]


@dataclass(frozen=True)
class SummaryResource:
    """One class on a summarised provider: capacity ``(total - reserved) * ratio``, floored,
    and the amount in use."""

    capacity: int
    used: int


@dataclass(frozen=True)
class ProviderSummary:
    """A provider of a tree that some candidate takes from: every class it has inventory of,
    its traits (sorted) and its place in its tree."""

    uuid: str
    parent_uuid: str | None
    root_uuid: str
    resources: dict[str, SummaryResource]
    traits: tuple[str, ...]


@dataclass(frozen=True)
class Candidates:
    """The answer: allocation requests in a stable order, and provider summaries in order of
    root provider UUID, each tree root first."""

    allocation_requests: tuple[AllocationRequest, ...] = ()
    provider_summaries: tuple[ProviderSummary, ...] = ()


class NoSuchResourceClass(InvalidRequest):
    """Raised when a request group names a resource class that does not exist."""

    resource_class: str
    MESSAGE = "No such resource class {resource_class}."


class NoSuchTraits(InvalidRequest):
    """Raised when a request names traits that do not exist (sorted in ``traits``)."""

    traits: list[str]

    def __init__(self, traits: list[str]) -> None:
        super().__init__(sorted(traits))

    def _message(self) -> str:
        return f"No such trait(s): {', '.join(self.traits)}."
