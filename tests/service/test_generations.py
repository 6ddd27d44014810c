"""The generation protocol through the service API, on every store (docs/guarantees.md §3): consumer
generations are stream versions, ``None`` means absent or emptied, every write adds exactly
one; provider generations advance on inventory changes and usage changes; a multi-consumer
write is all or nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from allocation_ledger import Ledger
from allocation_ledger.domain.errors import (
    ConsumerGenerationConflict,
    InsufficientCapacity,
    InvalidAllocation,
    InvalidRequest,
    LedgerError,
    ProviderGenerationConflict,
    ProviderNotFound,
)
from allocation_ledger.domain.ids import consumer_stream_id
from tests.builders import PROJECT, USER, a_host, new_id, snapshot
from tests.invariants import assert_invariants
from tests.service import shared_ledger_fixture
from tests.service.claiming import claim, write

shared_ledger = shared_ledger_fixture()


def conflict(ledger: Ledger, command: Callable[[], object]) -> dict[str, Any]:
    """Run a command that must be a consumer generation conflict writing nothing."""
    before = snapshot(ledger)
    with pytest.raises(ConsumerGenerationConflict) as caught:
        command()
    assert snapshot(ledger) == before
    err = caught.value
    assert f"expected {err.fields['expected']}, actual {err.fields['actual']}" in str(err)
    return err.fields


def consumer_events(ledger: Ledger, consumer: str) -> int:
    """How many events the consumer's stream holds."""
    stream = str(consumer_stream_id(consumer))
    return sum(1 for row in snapshot(ledger) if row[0] == stream)


# -- consumer generations ------------------------------------------------------------------


def test_a_new_consumer_writes_with_none_and_gets_generation_1(ledger: Ledger) -> None:
    """The first successful write leaves generation 1."""
    host, vm = a_host(ledger), new_id()
    assert ledger.consumer(vm).generation is None
    view = ledger.claim(vm, {host: {"VCPU": 1}}, None, project_id=PROJECT, user_id=USER)
    assert (view.consumer_uuid, view.generation, view.allocations) == (vm, 1,
                                                                        {host: {"VCPU": 1}})
    assert (view.project_id, view.user_id, view.consumer_type) == (PROJECT, USER, "INSTANCE")
    assert ledger.consumer(vm) == view


def test_none_for_an_existing_consumer_is_a_conflict(ledger: Ledger) -> None:
    """Two spawns of one instance: the second finds it present."""
    host, vm = a_host(ledger), new_id()
    claim(ledger, vm, {host: {"VCPU": 1}})
    claim(ledger, vm, {host: {"VCPU": 1}}, 1)
    assert conflict(ledger, lambda: claim(ledger, vm, {host: {"VCPU": 2}})) == {
        "consumer_uuid": vm, "expected": None, "actual": 2}


@pytest.mark.parametrize("stale", [2, 4])
def test_a_number_that_does_not_match_is_a_conflict(ledger: Ledger, stale: int) -> None:
    """Older and newer numbers alike; the conflict carries both."""
    host, vm = a_host(ledger), new_id()
    for generation in (None, 1, 2):
        claim(ledger, vm, {host: {"VCPU": 1}}, generation)
    assert ledger.consumer(vm).generation == 3
    assert conflict(ledger, lambda: claim(ledger, vm, {host: {"VCPU": 2}}, stale)) == {
        "consumer_uuid": vm, "expected": stale, "actual": 3}
    assert conflict(ledger, lambda: ledger.release(vm, stale))["expected"] == stale


def test_a_number_for_an_absent_consumer_is_a_conflict(ledger: Ledger) -> None:
    """The caller thinks it exists; it does not."""
    host, vm = a_host(ledger), new_id()
    assert conflict(ledger, lambda: claim(ledger, vm, {host: {"VCPU": 1}}, 1)) == {
        "consumer_uuid": vm, "expected": 1, "actual": None}


def test_an_emptied_consumer_writes_again_with_none_and_keeps_counting(ledger: Ledger) -> None:
    """claim -> 1, release -> (2, reads as None), claim with None -> 3; the number the stream
    had when it was emptied is refused."""
    host, vm = a_host(ledger), new_id()
    assert claim(ledger, vm, {host: {"VCPU": 1}}) == 1
    ledger.release(vm, 1)
    assert ledger.consumer(vm).generation is None
    assert conflict(ledger, lambda: claim(ledger, vm, {host: {"VCPU": 1}}, 2)) == {
        "consumer_uuid": vm, "expected": 2, "actual": None}
    assert claim(ledger, vm, {host: {"VCPU": 2}}) == 3
    assert ledger.force_release(vm) is True
    assert claim(ledger, vm, {host: {"VCPU": 1}}) == 5
    views = ledger.write_allocations([write(vm, {}, 5)])
    assert views[0].generation is None
    assert claim(ledger, vm, {host: {"VCPU": 1}}) == 7


def test_releasing_an_absent_or_emptied_consumer_does_nothing(ledger: Ledger) -> None:
    """Nothing to release (Nova's ``delete_allocation_for_instance`` on a consumer with no
    allocations): ``False``, nothing written, the stream unchanged; a number for it is
    still a conflict."""
    host, vm, never = a_host(ledger), new_id(), new_id()
    assert ledger.release(vm, claim(ledger, vm, {host: {"VCPU": 1}})) is True
    before = snapshot(ledger)
    assert ledger.release(vm, None) is False
    assert ledger.release(never, None) is False
    assert snapshot(ledger) == before
    assert conflict(ledger, lambda: ledger.release(never, 1)) == {
        "consumer_uuid": never, "expected": 1, "actual": None}
    assert claim(ledger, vm, {host: {"VCPU": 1}}) == 3


def test_every_write_adds_exactly_one_even_when_nothing_changes(ledger: Ledger) -> None:
    """Claim, multi-write and release each add 1, whatever they change."""
    host, vm = a_host(ledger), new_id()
    same = {host: {"VCPU": 2}}
    assert claim(ledger, vm, same) == 1
    assert claim(ledger, vm, same, 1) == 2
    assert claim(ledger, vm, same, 2) == 3
    assert ledger.write_allocations([write(vm, same, 3)])[0].generation == 4
    assert claim(ledger, vm, {host: {"VCPU": 3}}, 4) == 5
    stream_events = consumer_events(ledger, vm)
    assert claim(ledger, vm, {host: {"VCPU": 3}}, 5) == 6
    assert consumer_events(ledger, vm) == stream_events + 1


def test_a_multi_consumer_write_advances_each_named_consumer_by_one(ledger: Ledger) -> None:
    """Existing consumers go up by one, a new one starts at 1, an emptied one reads None;
    consumers the write does not name are untouched."""
    host = a_host(ledger, vcpu=16)
    a, b, c, bystander = new_id(), new_id(), new_id(), new_id()
    claim(ledger, a, {host: {"VCPU": 1}})
    claim(ledger, b, {host: {"VCPU": 1}})
    claim(ledger, b, {host: {"VCPU": 2}}, 1)
    claim(ledger, bystander, {host: {"VCPU": 1}})
    views = ledger.write_allocations(
        [write(a, {host: {"VCPU": 3}}, 1), write(b, {}, 2), write(c, {host: {"VCPU": 4}}, None)]
    )
    assert [(v.consumer_uuid, v.generation) for v in views] == [(a, 2), (b, None), (c, 1)]
    assert ledger.consumer(bystander).generation == 1
    assert claim(ledger, b, {host: {"VCPU": 1}}) == 4
    assert ledger.provider(host).usages["VCPU"] == 3 + 4 + 1 + 1
    assert_invariants(ledger)


BAD_PARTNERS: list[Any] = [
    pytest.param(lambda host, vm: write(vm, {host: {"VCPU": 1}}, 9), ConsumerGenerationConflict,
                 id="stale-generation"),
    pytest.param(lambda host, vm: write(vm, {host: {"VCPU": 1}}, None),
                 ConsumerGenerationConflict, id="none-for-present"),
    pytest.param(lambda host, vm: write(new_id(), {host: {"VCPU": 1}}, 1),
                 ConsumerGenerationConflict, id="number-for-absent"),
    pytest.param(lambda host, vm: write(new_id(), {host: {"VCPU": 5}}, None),
                 InsufficientCapacity, id="over-capacity"),
    pytest.param(lambda host, vm: write(new_id(), {host: {"MEMORY_MB": 3}}, None),
                 InvalidAllocation, id="off-step"),
    pytest.param(lambda host, vm: write(new_id(), {new_id(): {"VCPU": 1}}, None),
                 ProviderNotFound, id="unknown-provider"),
    pytest.param(lambda host, vm: write("nope", {host: {"VCPU": 1}}, None), InvalidRequest,
                 id="malformed-uuid"),
    pytest.param(lambda host, vm: write(new_id(), {}, None), InvalidRequest,
                 id="empty-for-absent"),
    pytest.param(lambda host, vm: write(vm, {}, 1) | {"project_id": ""}, InvalidRequest,
                 id="empty-project"),
]


@pytest.mark.parametrize(("bad", "error"), BAD_PARTNERS)
def test_a_multi_consumer_write_is_all_or_nothing(
    shared_ledger: Ledger, bad: Callable[[str, str], dict[str, Any]], error: type[LedgerError]
) -> None:
    """One bad consumer (``bad`` gets the host and a present consumer of its own) between
    two good ones, and nothing is written for any of them."""
    host = a_host(shared_ledger, vcpu=8, memory_mb=None, MEMORY_MB={"total": 1024, "step_size": 2})
    vm, newcomer, other = new_id(), new_id(), new_id()
    claim(shared_ledger, vm, {host: {"VCPU": 2}})
    claim(shared_ledger, other, {host: {"VCPU": 1}})
    good = [write(vm, {host: {"VCPU": 1}}, 1), write(newcomer, {host: {"VCPU": 3}}, None)]
    writes = [good[0], bad(host, other), good[1]]
    before = snapshot(shared_ledger)
    with pytest.raises(error) as caught:
        shared_ledger.write_allocations(writes)
    assert type(caught.value) is error
    assert snapshot(shared_ledger) == before
    assert [shared_ledger.consumer(c).generation for c in (vm, other, newcomer)] == [1, 1, None]
    assert shared_ledger.provider(host).usages["VCPU"] == 3
    assert shared_ledger.write_allocations(good)[1].generation == 1  # the good part alone succeeds


# -- provider generations ------------------------------------------------------------------


ProviderStep = Callable[[Ledger, str, str, str], object]

PROVIDER_STEPS: list[Any] = [
    pytest.param(lambda led, h, o, vm: led.set_inventories(h, {"VCPU": {"total": 9}}, 2), 1, 0,
                 id="set_inventories"),
    pytest.param(lambda led, h, o, vm: led.set_inventory(h, "DISK_GB", {"total": 9}, 2), 1, 0,
                 id="set_inventory"),
    pytest.param(lambda led, h, o, vm: led.set_inventory(h, "VCPU", {"total": 1}, 2), 1, 0,
                 id="lower-below-usage"),
    pytest.param(lambda led, h, o, vm: led.delete_inventory(h, "MEMORY_MB", 2), 1, 0,
                 id="delete_inventory"),
    pytest.param(lambda led, h, o, vm: claim(led, new_id(), {h: {"VCPU": 1}}), 1, 0,
                 id="claim-here"),
    pytest.param(lambda led, h, o, vm: claim(led, new_id(), {o: {"VCPU": 1}}), 0, 1,
                 id="claim-elsewhere"),
    pytest.param(lambda led, h, o, vm: claim(led, vm, {h: {"VCPU": 3}}, 1), 1, 0,
                 id="grow-here"),
    pytest.param(lambda led, h, o, vm: claim(led, vm, {h: {"VCPU": 1}}, 1), 1, 0,
                 id="shrink-here"),
    pytest.param(lambda led, h, o, vm: claim(led, vm, {o: {"VCPU": 2}}, 1), 1, 1,
                 id="move-to-other"),
    # The host's usage is unchanged: the contract does not say whether it advances.
    pytest.param(lambda led, h, o, vm: claim(led, vm, {h: {"VCPU": 2}, o: {"VCPU": 1}}, 1),
                 None, 1, id="add-other"),
    pytest.param(lambda led, h, o, vm: claim(led, vm, {h: {"VCPU": 2}}, 1), None, 0,
                 id="same-again"),
    pytest.param(lambda led, h, o, vm: led.release(vm, 1), 1, 0, id="release"),
    pytest.param(lambda led, h, o, vm: led.force_release(vm), 1, 0, id="force-release"),
    pytest.param(lambda led, h, o, vm: led.register_provider(new_id(), "c", parent_uuid=h), 0,
                 0, id="child-attached"),
]


@pytest.mark.parametrize(("step", "here", "other"), PROVIDER_STEPS)
def test_provider_generations(
    shared_ledger: Ledger, step: ProviderStep, here: int | None, other: int
) -> None:
    """Inventory changes and writes that change a provider's usage advance it by one;
    providers whose usage a write leaves alone do not move, nor does a child attached (as
    Placement numbers them: 0 at registration, 1 once its inventory is set)."""
    host, other_host, vm = a_host(shared_ledger), a_host(shared_ledger), new_id()
    claim(shared_ledger, vm, {host: {"VCPU": 2}})
    assert [shared_ledger.provider(p).generation for p in (host, other_host)] == [2, 1]
    step(shared_ledger, host, other_host, vm)
    if here is not None:
        assert shared_ledger.provider(host).generation == 2 + here
    assert shared_ledger.provider(other_host).generation == 1 + other
    assert_invariants(shared_ledger)


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(lambda led, h, g: led.set_inventories(h, {"VCPU": {"total": 2}}, g),
                     id="set_inventories"),
        pytest.param(lambda led, h, g: led.set_inventory(h, "VCPU", {"total": 2}, g),
                     id="set_inventory"),
        pytest.param(lambda led, h, g: led.delete_inventory(h, "MEMORY_MB", g),
                     id="delete_inventory"),
        pytest.param(lambda led, h, g: led.delete_provider(h, g), id="delete_provider"),
    ],
)
def test_a_stale_provider_generation_is_a_conflict(
    shared_ledger: Ledger, command: Callable[[Ledger, str, int], object]
) -> None:
    """A usage change since the caller read the provider makes its number stale."""
    expected = 1
    host = a_host(shared_ledger)
    claim(shared_ledger, new_id(), {host: {"VCPU": 1}})
    assert shared_ledger.provider(host).generation == 2
    before = snapshot(shared_ledger)
    with pytest.raises(ProviderGenerationConflict) as caught:
        command(shared_ledger, host, expected)
    assert caught.value.fields == {"provider_uuid": host, "expected": expected, "actual": 2}
    assert f"expected {expected}, actual 2" in str(caught.value)
    assert snapshot(shared_ledger) == before
