"""The provider traits and aggregates read models: rebuilt from zero and kept up batch by
batch they equal what the domain folds; a deleted provider keeps none; the listing's
filters read them."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.domain.provider_filters import ProviderFilter
from allocation_ledger.projections.readmodels import ReadModels
from tests.builders import a_host, new_id
from tests.projections.expected import folded, stored
from tests.stores import store_url

AVX2 = "HW_CPU_X86_AVX2"


def write_some(ledger: Ledger) -> tuple[str, str, str, str]:
    """Traits and aggregates given, changed, cleared, and a provider deleted with them."""
    ledger.create_trait("CUSTOM_GOLD")
    agg1, agg2 = new_id(), new_id()
    keep, gone = a_host(ledger), a_host(ledger, vcpu=4)
    child = a_host(ledger, parent=keep, vcpu=2)
    for rp, traits, aggs in ((keep, [AVX2, "CUSTOM_GOLD"], [agg1]),
                             (gone, [AVX2], [agg1, agg2]), (child, ["CUSTOM_GOLD"], [])):
        view = ledger.set_traits(rp, traits, ledger.provider(rp).generation)
        ledger.set_aggregates(rp, aggs, view.generation)
    view = ledger.set_traits(keep, ["CUSTOM_GOLD"], ledger.provider(keep).generation)
    ledger.set_aggregates(keep, [agg2], None)
    ledger.delete_provider(gone, ledger.provider(gone).generation)
    return keep, child, agg1, agg2


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_rebuilt_and_followed_equal_folded(kind: str, tmp_path: Path) -> None:
    with store_url(kind, tmp_path) as url, open_ledger(url) as ledger:
        read = ReadModels.of(ledger)
        keep, child, _, _ = write_some(ledger)
        read.resume(batch_size=2)  # kept up in small batches
        assert stored(read.engine) == folded(ledger)
        rows = stored(read.engine)
        assert ("proj_provider_traits" in rows
                and rows["proj_provider_traits"] == sorted(
                    [(keep, "CUSTOM_GOLD"), (child, "CUSTOM_GOLD")]))
        read.rebuild(batch_size=3)
        assert stored(read.engine) == folded(ledger)
        read.close()


def test_the_listing_filters_read_the_read_models(tmp_path: Path) -> None:
    with open_ledger(f"sqlite:///{tmp_path / 'l.db'}", read_side=True) as ledger:
        keep, child, agg1, agg2 = write_some(ledger)
        reads = ledger.reads

        def uuids(**wanted: object) -> set[str]:
            return {r.provider_uuid for r in reads.providers_matching(
                ProviderFilter(**wanted))}  # type: ignore[arg-type]

        assert uuids(required=(frozenset({"CUSTOM_GOLD"}),)) == {keep, child}
        assert uuids(required=(frozenset({AVX2}),)) == set()  # the one with it was deleted
        assert uuids(member_of=(frozenset({agg2}),)) == {keep}
        assert uuids(member_of=(frozenset({agg1}),)) == set()
        assert uuids(in_tree=child, resources={"VCPU": 16}) == {keep}
        assert uuids(in_tree=str(uuid.uuid4())) == set()
        assert reads.provider_traits() == {keep: ["CUSTOM_GOLD"], child: ["CUSTOM_GOLD"]}
        assert reads.provider_aggregates() == {keep: [agg2]}


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_moved_subtree_moves_in_the_read_models(kind: str, tmp_path: Path) -> None:
    with store_url(kind, tmp_path) as url, open_ledger(url) as ledger:
        read = ReadModels.of(ledger)
        host, other = a_host(ledger), a_host(ledger)
        numa = a_host(ledger, parent=host, vcpu=8)
        gpu = a_host(ledger, parent=numa, vcpu=None, memory_mb=None, VGPU={"total": 2})
        read.resume()
        ledger.set_parent(numa, other, ledger.provider(numa).generation)
        read.resume(batch_size=1)
        assert stored(read.engine) == folded(ledger)
        usage_roots = {(r[0], r[2]) for r in stored(read.engine)["proj_host_usage"]}
        assert {(numa, other), (gpu, other)} <= usage_roots
        ledger.set_parent(numa, None, ledger.provider(numa).generation)
        read.rebuild()
        assert stored(read.engine) == folded(ledger)
        read.close()
