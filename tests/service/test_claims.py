"""Claims, multi-consumer writes and releases through the service API, on every store:
Placement's capacity and unit rules, replacement without double counting, the no-worse rule
on an over-capacity provider, release and force release (guarantees §2, §4). Bad input and the
"nothing written" property of every refusal are tabled in ``test_rejections``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from allocation_ledger import Ledger
from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.errors import (
    InsufficientCapacity,
    InvalidAllocation,
    InvalidRequest,
    LedgerError,
)
from allocation_ledger.domain.ids import consumer_stream_id
from tests.builders import a_host, an_instance, new_id, snapshot
from tests.invariants import assert_invariants
from tests.service import shared_ledger_fixture
from tests.service.claiming import claim, write

shared_ledger = shared_ledger_fixture()


def refused(ledger: Ledger, error: type[LedgerError], command: Callable[[], object]) -> Any:
    """Run a command that must fail with ``error`` and write nothing; the error's fields."""
    before = snapshot(ledger)
    with pytest.raises(error) as caught:
        command()
    assert type(caught.value) is error
    assert snapshot(ledger) == before
    assert_invariants(ledger)
    return caught.value.fields


def widget_host(ledger: Ledger, **fields: Any) -> str:
    """A host whose only class is ``CUSTOM_WIDGET`` with the given inventory."""
    return a_host(ledger, vcpu=None, memory_mb=None, CUSTOM_WIDGET=fields)


# -- capacity ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "amount", "capacity"),
    [
        pytest.param({"total": 4}, 4, 4, id="fills-exactly"),
        pytest.param({"total": 4}, 5, 4, id="one-too-many"),
        pytest.param({"total": 4, "reserved": 4}, 1, 0, id="reserved-equals-total"),
        pytest.param({"total": 3, "allocation_ratio": 1.5}, 4, 4, id="3x1.5-fits-4"),
        pytest.param({"total": 3, "allocation_ratio": 1.5}, 5, 4, id="3x1.5-not-5"),
        pytest.param({"total": 8, "reserved": 2}, 6, 6, id="reserved-fits"),
        pytest.param({"total": 8, "reserved": 2}, 7, 6, id="reserved-not"),
        pytest.param({"total": 10, "allocation_ratio": 0.5}, 5, 5, id="ratio-0.5-fits"),
        pytest.param({"total": 10, "allocation_ratio": 0.5}, 6, 5, id="ratio-0.5-not"),
    ],
)
def test_one_claim_against_capacity(
    shared_ledger: Ledger, fields: dict[str, Any], amount: int, capacity: int
) -> None:
    """A claim fits when it stays within floor((total - reserved) * ratio)."""
    host = widget_host(shared_ledger, **fields)
    vm = new_id()
    if amount <= capacity:
        assert claim(shared_ledger, vm, {host: {"CUSTOM_WIDGET": amount}}) == 1
        assert shared_ledger.provider(host).usages == {"CUSTOM_WIDGET": amount}
        assert_invariants(shared_ledger)
        return
    err = refused(shared_ledger, InsufficientCapacity,
                  lambda: claim(shared_ledger, vm, {host: {"CUSTOM_WIDGET": amount}}))
    assert err == {"provider_uuid": host, "resource_class": "CUSTOM_WIDGET",
                   "requested": amount, "used": 0, "capacity": capacity, "free": capacity}
    assert shared_ledger.consumer(vm).generation is None


def test_capacity_is_shared_by_consumers(ledger: Ledger) -> None:
    """The third consumer finds what the first two left: nothing."""
    host = widget_host(ledger, total=3, allocation_ratio=1.5)
    an_instance(ledger, {host: {"CUSTOM_WIDGET": 3}})
    an_instance(ledger, {host: {"CUSTOM_WIDGET": 1}})
    err = refused(ledger, InsufficientCapacity,
                  lambda: an_instance(ledger, {host: {"CUSTOM_WIDGET": 1}}))
    assert (err["requested"], err["used"], err["capacity"], err["free"]) == (1, 4, 4, 0)


def test_every_provider_of_a_claim_is_checked(ledger: Ledger) -> None:
    """A claim over two hosts takes from both, or from neither."""
    big, small = a_host(ledger, vcpu=8), a_host(ledger, vcpu=1)
    err = refused(ledger, InsufficientCapacity,
                  lambda: an_instance(ledger, {big: {"VCPU": 4}, small: {"VCPU": 2}}))
    assert (err["provider_uuid"], err["requested"], err["free"]) == (small, 2, 1)
    vm = an_instance(ledger, {big: {"VCPU": 4}, small: {"VCPU": 1}})
    assert vm.allocations == {big: {"VCPU": 4}, small: {"VCPU": 1}}
    assert (ledger.provider(big).usages["VCPU"], ledger.provider(small).usages["VCPU"]) == (4, 1)
    assert_invariants(ledger)


# -- unit rules ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "amount", "reason"),
    [
        pytest.param({"total": 64, "min_unit": 2}, 1, "below min_unit 2", id="below-min"),
        pytest.param({"total": 64, "min_unit": 2}, 2, None, id="at-min"),
        pytest.param({"total": 64, "max_unit": 4}, 4, None, id="at-max"),
        pytest.param({"total": 64, "max_unit": 4}, 5, "above max_unit 4", id="above-max"),
        pytest.param({"total": 64, "step_size": 4}, 8, None, id="on-step"),
        pytest.param({"total": 64, "step_size": 4}, 6, "not a multiple of step_size 4",
                     id="off-step"),
        pytest.param({"total": 64, "min_unit": 4, "max_unit": 16, "step_size": 4}, 16, None,
                     id="all-three"),
        pytest.param({"total": 64, "min_unit": 4, "max_unit": 16, "step_size": 4}, 20,
                     "above max_unit 16", id="all-three-above-max"),
    ],
)
def test_one_claim_against_the_unit_rules(
    shared_ledger: Ledger, fields: dict[str, Any], amount: int, reason: str | None
) -> None:
    """min_unit <= amount <= max_unit and amount % step_size == 0, per record."""
    host = widget_host(shared_ledger, **fields)
    vm = new_id()
    if reason is None:
        assert claim(shared_ledger, vm, {host: {"CUSTOM_WIDGET": amount}}) == 1
        return
    err = refused(shared_ledger, InvalidAllocation,
                  lambda: claim(shared_ledger, vm, {host: {"CUSTOM_WIDGET": amount}}))
    assert err == {"consumer_uuid": vm, "provider_uuid": host,
                   "resource_class": "CUSTOM_WIDGET", "amount": amount, "reason": reason}


def test_unit_rules_apply_to_each_record_not_the_sum(ledger: Ledger) -> None:
    """Two consumers of 4 with max_unit 4 are fine: usage 8 is no single record."""
    host = widget_host(ledger, total=8, max_unit=4)
    an_instance(ledger, {host: {"CUSTOM_WIDGET": 4}})
    an_instance(ledger, {host: {"CUSTOM_WIDGET": 4}})
    assert ledger.provider(host).usages == {"CUSTOM_WIDGET": 8}


# -- replacement: the old allocation is removed before the new one is checked ---------------


@pytest.mark.parametrize(
    ("new_amount", "numbers"),
    [
        pytest.param(4, None, id="grow-to-capacity"),
        pytest.param(3, None, id="same"),
        pytest.param(1, None, id="shrink"),
        pytest.param(5, (2, 3, 4, 1), id="beyond-capacity"),
    ],
)
def test_replacing_an_allocation_does_not_double_count(
    shared_ledger: Ledger, new_amount: int, numbers: tuple[int, int, int, int] | None
) -> None:
    """Holding 3 of 4, a consumer may ask for 4 (not 3 + 4), never for 5."""
    host = a_host(shared_ledger, vcpu=4)
    vm = new_id()
    claim(shared_ledger, vm, {host: {"VCPU": 3}})
    if numbers is None:
        assert claim(shared_ledger, vm, {host: {"VCPU": new_amount}}, 1) == 2
        assert shared_ledger.provider(host).usages["VCPU"] == new_amount
        assert_invariants(shared_ledger)
        return
    err = refused(shared_ledger, InsufficientCapacity,
                  lambda: claim(shared_ledger, vm, {host: {"VCPU": new_amount}}, 1))
    assert (err["requested"], err["used"], err["capacity"], err["free"]) == numbers


def test_a_write_frees_before_it_takes_across_consumers(ledger: Ledger) -> None:
    """On a full host, one write may hand one consumer's share to another (as a swap does);
    taking one unit more than was freed is still refused."""
    host = a_host(ledger, vcpu=4)
    old, new = new_id(), new_id()
    claim(ledger, old, {host: {"VCPU": 4}})
    err = refused(ledger, InsufficientCapacity, lambda: ledger.write_allocations(
        [write(old, {}, 1), write(new, {host: {"VCPU": 5}}, None)]))
    assert (err["requested"], err["used"], err["free"]) == (1, 4, 0)
    views = ledger.write_allocations([write(old, {}, 1), write(new, {host: {"VCPU": 4}}, None)])
    assert [v.generation for v in views] == [None, 1]
    assert ledger.provider(host).usages["VCPU"] == 4
    assert_invariants(ledger)


# -- over capacity: a write may not make it worse -----------------------------------------


def over_capacity_host(ledger: Ledger) -> tuple[str, str, str]:
    """A host with 6 VCPU used (A holds 4, B holds 2) after its total was lowered to 4."""
    host = a_host(ledger, vcpu=8, memory_mb=1024)
    a, b = new_id(), new_id()
    claim(ledger, a, {host: {"VCPU": 4}})
    claim(ledger, b, {host: {"VCPU": 2}})
    view = ledger.set_inventory(host, "VCPU", {"total": 4}, ledger.provider(host).generation)
    assert (view.classes["VCPU"].used, view.classes["VCPU"].over_capacity) == (6, True)
    return host, a, b


OverCase = Callable[[Ledger, str, str, str], object]

OVER_CAPACITY_WRITES: list[Any] = [
    pytest.param(lambda led, h, a, b: claim(led, a, {h: {"VCPU": 3}}, 1), 5, id="shrink"),
    pytest.param(lambda led, h, a, b: claim(led, a, {h: {"VCPU": 4}}, 1), 6, id="keep"),
    pytest.param(lambda led, h, a, b: led.release(b, 1), 4, id="release"),
    pytest.param(lambda led, h, a, b: claim(led, a, {h: {"VCPU": 4, "MEMORY_MB": 512}}, 1), 6,
                 id="other-class-grows"),
    pytest.param(lambda led, h, a, b: led.write_allocations(
        [write(a, {h: {"VCPU": 2}}, 1), write(new_id(), {h: {"VCPU": 1}}, None)]), 5,
        id="net-shrink-with-a-newcomer"),
    pytest.param(lambda led, h, a, b: claim(led, a, {h: {"VCPU": 5}}, 1), None, id="grow"),
    pytest.param(lambda led, h, a, b: claim(led, new_id(), {h: {"VCPU": 1}}), None,
                 id="newcomer"),
    pytest.param(lambda led, h, a, b: led.write_allocations(
        [write(a, {h: {"VCPU": 3}}, 1), write(b, {h: {"VCPU": 4}}, 1)]), None,
        id="net-growth-across-consumers"),
]


@pytest.mark.parametrize(("command", "usage_after"), OVER_CAPACITY_WRITES)
def test_writes_on_an_over_capacity_provider(
    shared_ledger: Ledger, command: OverCase, usage_after: int | None
) -> None:
    """Shrinking or keeping usage is accepted; growing it is refused (capacity 4, used 6)."""
    host, a, b = over_capacity_host(shared_ledger)
    if usage_after is not None:
        command(shared_ledger, host, a, b)
        assert shared_ledger.provider(host).usages["VCPU"] == usage_after
        assert_invariants(shared_ledger)
        return
    err = refused(shared_ledger, InsufficientCapacity, lambda: command(shared_ledger, host, a, b))
    assert err["provider_uuid"] == host
    assert (err["resource_class"], err["used"], err["capacity"], err["free"]) == ("VCPU", 6, 4, 0)


# -- ids (other bad input is in test_rejections) -------------------------------------------


def test_two_spellings_of_one_provider_are_refused(ledger: Ledger) -> None:
    """Upper- and lower-case forms of one UUID name one provider: refuse, never drop one."""
    host = a_host(ledger)
    refused(ledger, InvalidRequest,
            lambda: an_instance(ledger, {host.upper(): {"VCPU": 1}, host: {"VCPU": 2}}))


def test_ids_are_canonical(ledger: Ledger) -> None:
    """An upper-case UUID names the same provider and consumer as its lower-case form."""
    host, vm = a_host(ledger), new_id()
    claim(ledger, vm.upper(), {host.upper(): {"VCPU": 2}})
    view = ledger.consumer(vm)
    assert (view.consumer_uuid, view.generation, view.allocations) == (
        vm, 1, {host: {"VCPU": 2}})
    assert ledger.consumer(vm.upper()) == view


# -- release and force release ------------------------------------------------------------


def test_release_frees_everything(ledger: Ledger) -> None:
    """After release the consumer reads as absent and the hosts are empty."""
    one, two = a_host(ledger), a_host(ledger)
    vm = an_instance(ledger, {one: {"VCPU": 2}, two: {"MEMORY_MB": 512}})
    ledger.release(vm.consumer_uuid, vm.generation)
    view = ledger.consumer(vm.consumer_uuid)
    assert (view.generation, view.allocations) == (None, {})
    assert ledger.provider(one).usages == {"VCPU": 0, "MEMORY_MB": 0}
    assert ledger.provider(two).usages == {"VCPU": 0, "MEMORY_MB": 0}
    assert_invariants(ledger)


def test_force_release_ignores_the_generation(ledger: Ledger) -> None:
    """An operator's cleanup: no generation asked, the event says it was forced."""
    host = a_host(ledger)
    vm = an_instance(ledger, {host: {"VCPU": 2}})
    claim(ledger, vm.consumer_uuid, {host: {"VCPU": 3}}, 1)
    assert ledger.force_release(vm.consumer_uuid, request={"actor": "ops"}) is True
    assert ledger.consumer(vm.consumer_uuid).generation is None
    assert ledger.provider(host).usages["VCPU"] == 0
    stream = consumer_stream_id(vm.consumer_uuid)
    events = [ledger.store.mapper.to_domain_event(n)
              for n in ledger.store.recorder.select_notifications(1, 1_000_000)
              if n.originator_id == stream]
    assert [type(e).__qualname__ for e in events] == [
        "Consumer.Created", "Consumer.AllocationsClaimed", "Consumer.AllocationsReleased"]
    released = events[-1]
    assert isinstance(released, Consumer.AllocationsReleased)
    assert (released.forced, released.request["actor"], released.allocations) == (
        True, "ops", {})
    # every command stamps its events with a command id of its own
    assert len({e.request["command_id"] for e in events}) == 3
    assert_invariants(ledger)


@pytest.mark.parametrize("history", ["never-written", "released", "force-released"])
def test_force_release_of_an_absent_consumer_is_a_no_op(ledger: Ledger, history: str) -> None:
    """``False``, and nothing written, whether the consumer never existed or was emptied."""
    host = a_host(ledger)
    vm = new_id()
    if history == "released":
        ledger.release(vm, claim(ledger, vm, {host: {"VCPU": 1}}))
    elif history == "force-released":
        claim(ledger, vm, {host: {"VCPU": 1}})
        assert ledger.force_release(vm) is True
    before = snapshot(ledger)
    assert ledger.force_release(vm) is False
    assert snapshot(ledger) == before

