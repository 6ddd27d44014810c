"""Traits and aggregates through the service API, on every store: custom traits created,
deleted and created again on their own stream; a provider's traits and aggregates replaced
as Placement replaces them, each an event on the provider's stream that takes and advances
its generation (an aggregate write without a generation, Placement's before 1.19, takes
none). Generations are read from the views, never assumed."""

from __future__ import annotations

import pytest

from allocation_ledger import Ledger
from allocation_ledger.domain.errors import (
    InvalidRequest,
    ProviderGenerationConflict,
    ProviderNotFound,
    StandardTrait,
    TraitInUse,
    TraitNotFound,
    UnknownTraits,
)
from allocation_ledger.domain.ids import provider_stream_id, trait_stream_id
from allocation_ledger.domain.provider import Provider
from allocation_ledger.domain.trait import Trait
from tests.builders import a_host, new_id

AVX2 = "HW_CPU_X86_AVX2"
SHARES = "MISC_SHARES_VIA_AGGREGATE"


def test_standard_traits_are_os_traits_list(ledger: Ledger) -> None:
    import os_traits

    listed = ledger.traits()
    assert set(os_traits.get_traits()) <= set(listed)
    assert listed == sorted(listed)
    assert ledger.trait_exists(AVX2) and ledger.trait_exists(SHARES)
    assert not ledger.trait_exists("CUSTOM_NOT_YET") and not ledger.trait_exists("NOT_A_TRAIT")


def test_a_custom_trait_is_created_once_deleted_and_created_again_on_one_stream(
        ledger: Ledger) -> None:
    assert ledger.create_trait("CUSTOM_GOLD", request={"actor": "ops", "reason": "tier"})
    assert ledger.create_trait("CUSTOM_GOLD") is False  # exists: nothing written
    assert ledger.trait_exists("CUSTOM_GOLD")
    assert "CUSTOM_GOLD" in ledger.traits(prefix="CUSTOM_")
    ledger.delete_trait("CUSTOM_GOLD")
    assert not ledger.trait_exists("CUSTOM_GOLD")
    assert "CUSTOM_GOLD" not in ledger.traits()
    assert ledger.create_trait("CUSTOM_GOLD")
    stream = list(ledger.store.events.get(trait_stream_id("CUSTOM_GOLD")))
    assert [type(e) for e in stream] == [Trait.Created, Trait.Deleted, Trait.Recreated]
    assert stream[0].request["actor"] == "ops"


@pytest.mark.parametrize("name", ["GOLD", "CUSTOM_", "CUSTOM_gold", "CUSTOM_A-B",
                                  "CUSTOM_" + "A" * 249])
def test_a_malformed_custom_trait_is_refused(ledger: Ledger, name: str) -> None:
    with pytest.raises(InvalidRequest, match="invalid"):
        ledger.create_trait(name)


def test_deleting_standard_unknown_or_held_traits_is_refused(ledger: Ledger) -> None:
    with pytest.raises(StandardTrait, match=f"Cannot delete standard trait {AVX2}"):
        ledger.delete_trait(AVX2)
    with pytest.raises(TraitNotFound, match="No such trait"):
        ledger.delete_trait("CUSTOM_NEVER")
    ledger.create_trait("CUSTOM_HELD")
    host = a_host(ledger)
    view = ledger.set_traits(host, ["CUSTOM_HELD"], ledger.provider(host).generation)
    with pytest.raises(TraitInUse, match="CUSTOM_HELD is in use") as refused:
        ledger.delete_trait("CUSTOM_HELD")
    assert refused.value.provider_uuids == [host]
    ledger.set_traits(host, [], view.generation)
    ledger.delete_trait("CUSTOM_HELD")  # nobody has it now
    assert not ledger.trait_exists("CUSTOM_HELD")


def test_a_deleted_providers_traits_hold_no_trait(ledger: Ledger) -> None:
    ledger.create_trait("CUSTOM_GONE")
    host = a_host(ledger)
    view = ledger.set_traits(host, ["CUSTOM_GONE"], ledger.provider(host).generation)
    ledger.delete_provider(host, view.generation)
    ledger.delete_trait("CUSTOM_GONE")


def test_provider_traits_replace_the_set_and_advance_the_generation(ledger: Ledger) -> None:
    ledger.create_trait("CUSTOM_FAST")
    host = a_host(ledger)
    before = ledger.provider(host)
    view = ledger.set_traits(host, ["CUSTOM_FAST", AVX2], before.generation,
                             request={"actor": "nova-compute"})
    assert view.traits == ("CUSTOM_FAST", AVX2)
    assert view.generation == before.generation + 1
    again = ledger.set_traits(host, [AVX2, "CUSTOM_FAST"], view.generation)
    assert again.generation == view.generation + 1  # the same set is a change, as Placement
    cleared = ledger.set_traits(host, [], again.generation)
    assert cleared.traits == () and cleared.generation == again.generation + 1
    assert ledger.provider(host) == cleared


def test_provider_traits_are_checked_before_anything_is_written(ledger: Ledger) -> None:
    host = a_host(ledger)
    gen = ledger.provider(host).generation
    with pytest.raises(UnknownTraits, match="No such trait CUSTOM_NOPE, NOT_STANDARD") as err:
        ledger.set_traits(host, [AVX2, "NOT_STANDARD", "CUSTOM_NOPE"], gen)
    assert err.value.names == ["CUSTOM_NOPE", "NOT_STANDARD"]
    with pytest.raises(ProviderGenerationConflict) as stale:
        ledger.set_traits(host, [AVX2], gen + 7)
    assert (stale.value.expected, stale.value.actual) == (gen + 7, gen)
    with pytest.raises(InvalidRequest, match="non-unique"):
        ledger.set_traits(host, [AVX2, AVX2], gen)
    with pytest.raises(InvalidRequest, match="expected a list"):
        ledger.set_traits(host, AVX2, gen)
    with pytest.raises(ProviderNotFound):
        ledger.set_traits(new_id(), [AVX2], 0)
    assert ledger.provider(host).traits == () and ledger.provider(host).generation == gen


def test_a_deleted_custom_trait_cannot_be_given(ledger: Ledger) -> None:
    ledger.create_trait("CUSTOM_OLD")
    ledger.delete_trait("CUSTOM_OLD")
    host = a_host(ledger)
    with pytest.raises(UnknownTraits):
        ledger.set_traits(host, ["CUSTOM_OLD"], ledger.provider(host).generation)


def test_aggregates_with_a_generation_advance_it(ledger: Ledger) -> None:
    host = a_host(ledger)
    agg1, agg2 = sorted([new_id(), new_id()])
    before = ledger.provider(host)
    view = ledger.set_aggregates(host, [agg2, agg1.upper()], before.generation)
    assert view.aggregates == (agg1, agg2)  # canonical and sorted
    assert view.generation == before.generation + 1
    with pytest.raises(ProviderGenerationConflict):
        ledger.set_aggregates(host, [], before.generation)
    cleared = ledger.set_aggregates(host, [], view.generation)
    assert cleared.aggregates == () and cleared.generation == view.generation + 1


@pytest.mark.skipif(not hasattr(Provider.Event, "counted"),
                    reason="needs Placement's provider generations (events not counted)")
def test_aggregates_without_a_generation_leave_it(ledger: Ledger) -> None:
    host = a_host(ledger)
    before = ledger.provider(host)
    view = ledger.set_aggregates(host, [new_id()], None)
    assert len(view.aggregates) == 1
    assert view.generation == before.generation


def test_aggregates_without_a_generation_are_recorded_as_such(ledger: Ledger) -> None:
    host = a_host(ledger)
    agg = new_id()
    ledger.set_aggregates(host, [agg], None)
    last = list(ledger.store.events.get(provider_stream_id(host)))[-1]
    assert type(last) is Provider.AggregatesSetWithoutGeneration
    assert last.aggregates == [agg]


@pytest.mark.parametrize("aggregates", [["not-a-uuid"], "abc", [1]])
def test_malformed_aggregates_are_refused(ledger: Ledger, aggregates: object) -> None:
    host = a_host(ledger)
    with pytest.raises(InvalidRequest):
        ledger.set_aggregates(host, aggregates, ledger.provider(host).generation)  # type: ignore[arg-type]


def test_same_aggregate_twice_is_refused(ledger: Ledger) -> None:
    host, agg = a_host(ledger), new_id()
    with pytest.raises(InvalidRequest, match="non-unique"):
        ledger.set_aggregates(host, [agg, agg], ledger.provider(host).generation)


def test_traits_listing_filters_as_placement(ledger: Ledger) -> None:
    for name in ("CUSTOM_A1", "CUSTOM_A2", "CUSTOM_B1"):
        ledger.create_trait(name)
    host = a_host(ledger)
    ledger.set_traits(host, ["CUSTOM_A1", AVX2], ledger.provider(host).generation)
    assert ledger.traits(prefix="CUSTOM_A") == ["CUSTOM_A1", "CUSTOM_A2"]
    assert ledger.traits(name_in=["CUSTOM_B1", AVX2, "CUSTOM_NONE"]) == ["CUSTOM_B1", AVX2]
    assert ledger.traits(associated=True) == ["CUSTOM_A1", AVX2]
    unheld = ledger.traits(associated=False)
    assert "CUSTOM_A2" in unheld and "CUSTOM_A1" not in unheld and AVX2 not in unheld
    assert ledger.traits(prefix="CUSTOM_", associated=False) == ["CUSTOM_A2", "CUSTOM_B1"]


def test_a_command_id_applies_a_trait_change_once(ledger: Ledger) -> None:
    host = a_host(ledger)
    gen = ledger.provider(host).generation
    first = ledger.set_traits(host, [AVX2], gen, command_id="traits-1")
    again = ledger.set_traits(host, [AVX2], gen, command_id="traits-1")
    assert again.replayed and again.generation == first.generation
    assert ledger.provider(host).generation == first.generation
