"""Re-parenting through the service API, on every store: a root taken under a parent, a
child moved to another parent or made a root, with every provider below it following
(their root changes); loops and, without ``reparenting``, moves of a child are refused with
nothing written. Placement keeps the generations of everyone involved."""

from __future__ import annotations

import pytest

from allocation_ledger import Ledger
from allocation_ledger.domain.errors import (
    InvalidRequest,
    ProviderGenerationConflict,
    ProviderNotFound,
)
from allocation_ledger.domain.provider import Provider
from tests.builders import a_host, an_instance, new_id

COUNTS_LIKE_PLACEMENT = pytest.mark.skipif(
    not hasattr(Provider.Event, "counted"),
    reason="needs Placement's provider generations (events not counted)")


def a_tree(ledger: Ledger) -> tuple[str, str, str]:
    """A host with a NUMA child and a GPU grandchild."""
    host = a_host(ledger)
    numa = a_host(ledger, parent=host, vcpu=8)
    gpu = a_host(ledger, parent=numa, vcpu=None, memory_mb=None, VGPU={"total": 4})
    return host, numa, gpu


def test_a_subtree_moves_to_another_host(ledger: Ledger) -> None:
    host, numa, gpu = a_tree(ledger)
    other = a_host(ledger)
    vm = an_instance(ledger, {gpu: {"VGPU": 1}})
    moved = ledger.set_parent(numa, other, ledger.provider(numa).generation,
                              request={"actor": "operator", "reason": "rewired"})
    assert (moved.parent_uuid, moved.root_uuid) == (other, other)
    assert ledger.provider(gpu).root_uuid == other  # below it follows
    assert ledger.provider(host).children == ()
    assert ledger.provider(other).children == (numa,)
    assert list(ledger.tree(other)) == [other, numa, gpu]
    assert ledger.consumer(vm.consumer_uuid).allocations == {gpu: {"VGPU": 1}}  # they stay
    assert {p.uuid: p.root_uuid for p in ledger.providers().values()}[gpu] == other


def test_a_child_made_a_root_takes_its_subtree(ledger: Ledger) -> None:
    host, numa, gpu = a_tree(ledger)
    view = ledger.set_parent(numa, None, ledger.provider(numa).generation)
    assert (view.parent_uuid, view.root_uuid) == (None, numa)
    assert ledger.provider(gpu).root_uuid == numa
    assert ledger.provider(host).children == ()


def test_a_root_taken_under_a_parent_without_reparenting(ledger: Ledger) -> None:
    host, root = a_host(ledger), a_host(ledger)
    view = ledger.set_parent(root, host, ledger.provider(root).generation, reparenting=False)
    assert (view.parent_uuid, view.root_uuid) == (host, host)


@pytest.mark.parametrize("to", ["other", None])
def test_moving_a_child_needs_reparenting(ledger: Ledger, to: str | None) -> None:
    host, numa, _ = a_tree(ledger)
    other = a_host(ledger)
    doing = "re-parenting" if to else "un-parenting"
    before = ledger.provider(numa)
    with pytest.raises(InvalidRequest, match=f"{doing} a provider is not currently allowed"):
        ledger.set_parent(numa, other if to else None, before.generation, reparenting=False)
    assert ledger.provider(numa) == before and ledger.provider(host).children == (numa,)


def test_loops_are_refused(ledger: Ledger) -> None:
    host, numa, gpu = a_tree(ledger)
    for parent in (gpu, numa):
        with pytest.raises(InvalidRequest, match="creating loop in the provider tree"):
            ledger.set_parent(numa, parent, ledger.provider(numa).generation)
    with pytest.raises(InvalidRequest, match="creating loop"):
        ledger.set_parent(host, gpu, ledger.provider(host).generation)
    assert ledger.provider(numa).parent_uuid == host


def test_unknown_parent_or_stale_generation_write_nothing(ledger: Ledger) -> None:
    _, numa, _ = a_tree(ledger)
    before = ledger.provider(numa)
    with pytest.raises(ProviderNotFound):
        ledger.set_parent(numa, new_id(), before.generation)
    with pytest.raises(ProviderGenerationConflict):
        ledger.set_parent(numa, None, before.generation + 3)
    assert ledger.provider(numa) == before


def test_the_same_parent_is_no_change(ledger: Ledger) -> None:
    host, numa, _ = a_tree(ledger)
    before = ledger.provider(numa)
    assert ledger.set_parent(numa, host, before.generation) == before


@COUNTS_LIKE_PLACEMENT
def test_generations_stay_as_placements_do(ledger: Ledger) -> None:
    host, numa, gpu = a_tree(ledger)
    other = a_host(ledger)
    before = {rp: ledger.provider(rp).generation for rp in (host, numa, gpu, other)}
    ledger.set_parent(numa, other, before[numa])
    assert {rp: ledger.provider(rp).generation for rp in before} == before
