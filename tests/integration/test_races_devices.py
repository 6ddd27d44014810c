"""Racing device claims on PostgreSQL (guarantees §3, §5.3): the last free device goes to one
claimant, and the loser holds neither an allocation nor a device; two claims naming the same
device end with one holder; many claimants on a host with a few devices never give a device
two holders. Each race runs on threads sharing a ledger and on separate processes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

from allocation_ledger import Ledger
from tests.builders import a_host, an_instance, new_id
from tests.integration import racing
from tests.integration.racing import Outcome, claim_call, overlapped, tally
from tests.invariants import assert_invariants

pytestmark = pytest.mark.postgres

# Each race runs a short version in the default run and its long trial (100 rounds) with
# --slow; ids stay deterministic for xdist.
ROUNDS = [pytest.param(10, id="10-rounds"),
          pytest.param(100, id="100-rounds", marks=pytest.mark.slow)]
KINDS = ["threads", "processes"]
REFUSALS = {"InsufficientCapacity", "DevicesUnavailable", "ConcurrentUpdate"}


@pytest.fixture(scope="module")
def arena() -> Iterator[racing.Arena]:
    """One schema, ledger, thread racer and worker processes for the whole module."""
    with racing.arena() as found:
        yield found
        assert_invariants(found.ledger)


def a_device_host(ledger: Ledger, resource_class: str, count: int) -> str:
    """A host with ``count`` named devices ``dev-0``... of ``resource_class``."""
    host = a_host(ledger, vcpu=16, memory_mb=None)
    ledger.set_devices(host, resource_class, [f"dev-{i}" for i in range(count)],
                       ledger.provider(host).generation)
    return host


def assert_holds_nothing(ledger: Ledger, consumer: str) -> None:
    """A refused claimant: no allocation, no device, no generation."""
    view = ledger.consumer(consumer)
    assert (view.generation, view.allocations, view.devices) == (None, {}, {}), view


def one_winner(claimants: Sequence[str], outcomes: Sequence[Outcome]) -> tuple[str, str, Outcome]:
    """Of two claimants exactly one won: the winner, the loser and the loser's outcome."""
    assert sorted(o.ok for o in outcomes) == [False, True], outcomes
    winner, loser = claimants if outcomes[0].ok else claimants[::-1]
    return winner, loser, outcomes[claimants.index(loser)]


def report(name: str, kind: str, counts: dict[str, int], contended: int, rounds: int) -> None:
    """The figures of one test (shown with ``pytest -s``)."""
    print(f"\n{name} ({kind} x {rounds}): {counts}, all in flight together in "
          f"{contended} rounds")
    assert contended > rounds // 4, "the racers hardly overlapped: nothing was raced"


@pytest.mark.parametrize("rounds", ROUNDS)
@pytest.mark.parametrize("kind", KINDS)
def test_two_claims_for_the_last_free_device_one_wins(
        arena: racing.Arena, kind: str, rounds: int) -> None:
    ledger, racer = arena.ledger, arena.racer(kind)
    counts: dict[str, int] = {}
    contended = 0
    for _ in range(rounds):
        start = arena.position()
        host = a_device_host(ledger, "CUSTOM_PMEM", 2)
        filler = an_instance(ledger, {host: {"VCPU": 1, "CUSTOM_PMEM": 1}}).consumer_uuid
        want = {host: {"VCPU": 1, "CUSTOM_PMEM": 1}}
        claimants = [new_id(), new_id()]
        outcomes = racer.race([claim_call(c, want) for c in claimants])
        tally(outcomes, counts)
        contended += overlapped(outcomes)

        winner, loser, refusal = one_winner(claimants, outcomes)
        assert refusal.error in REFUSALS, outcomes
        assert ledger.consumer(winner).devices == {host: {"CUSTOM_PMEM": ["dev-1"]}}
        assert_holds_nothing(ledger, loser)
        view = ledger.provider(host)
        assert view.devices == {"CUSTOM_PMEM": {"dev-0": filler, "dev-1": winner}}
        assert view.usages == {"VCPU": 2, "CUSTOM_PMEM": 2}
        arena.assert_round(start, [host])
    report("last free device", kind, counts, contended, rounds)


@pytest.mark.parametrize("rounds", ROUNDS)
@pytest.mark.parametrize("kind", KINDS)
def test_two_claims_naming_the_same_device_one_wins(
        arena: racing.Arena, kind: str, rounds: int) -> None:
    ledger, racer = arena.ledger, arena.racer(kind)
    counts: dict[str, int] = {}
    contended = 0
    for _ in range(rounds):
        start = arena.position()
        host = a_device_host(ledger, "VGPU", 3)
        want = {host: {"VGPU": 1}}
        named = {host: {"VGPU": ["dev-1"]}}
        claimants = [new_id(), new_id()]
        outcomes = racer.race([claim_call(c, want, devices=named) for c in claimants])
        tally(outcomes, counts)
        contended += overlapped(outcomes)

        winner, loser, refusal = one_winner(claimants, outcomes)
        assert refusal.error in {"DevicesUnavailable", "ConcurrentUpdate"}, refusal
        if refusal.error == "DevicesUnavailable":
            assert refusal.fields["detail"] == f"device dev-1 is held by {winner}", refusal
        assert ledger.consumer(winner).devices == named
        assert_holds_nothing(ledger, loser)
        view = ledger.provider(host)
        assert view.devices == {"VGPU": {"dev-0": None, "dev-1": winner, "dev-2": None}}
        assert view.usages == {"VCPU": 0, "VGPU": 1}
        arena.assert_round(start, [host])
    report("same named device", kind, counts, contended, rounds)


@pytest.mark.parametrize("rounds", ROUNDS)
@pytest.mark.parametrize("kind", KINDS)
def test_many_claimants_for_a_few_devices_never_share_one(
    arena: racing.Arena, kind: str, rounds: int
) -> None:
    ledger, racer = arena.ledger, arena.racer(kind)
    counts: dict[str, int] = {}
    contended = 0
    for _ in range(rounds):
        start = arena.position()
        host = a_device_host(ledger, "CUSTOM_PMEM", 3)
        claimants = [new_id() for _ in range(racer.parties)]
        amounts = [1 + i % 2 for i in range(racer.parties)]  # 1, 2, 1, 2...: 3 devices
        outcomes = racer.race([claim_call(c, {host: {"VCPU": 1, "CUSTOM_PMEM": n}})
                               for c, n in zip(claimants, amounts, strict=True)])
        tally(outcomes, counts)
        contended += overlapped(outcomes)
        assert_one_holder_each(ledger, host, claimants, amounts, outcomes)
        arena.assert_round(start, [host])
    report("many claimants, 3 devices", kind, counts, contended, rounds)


def assert_one_holder_each(ledger: Ledger, host: str, claimants: Sequence[str],
                           amounts: Sequence[int], outcomes: Sequence[Outcome]) -> None:
    """Winners hold exactly their amount of distinct devices, the host agrees, and every
    refusal was right: the host is too full for the loser's request even at the end."""
    view = ledger.provider(host)
    table = view.devices["CUSTOM_PMEM"]
    held: dict[str, str] = {}
    wins = 0
    for consumer, amount, outcome in zip(claimants, amounts, outcomes, strict=True):
        if not outcome.ok:
            assert outcome.error in REFUSALS, outcome
            assert_holds_nothing(ledger, consumer)
            if outcome.error != "ConcurrentUpdate":
                free = sum(1 for holder in table.values() if holder is None)
                assert free < amount, (outcome, table)
            continue
        wins += amount
        devices = ledger.consumer(consumer).devices[host]["CUSTOM_PMEM"]
        assert len(devices) == amount, devices
        for device in devices:
            assert device not in held, f"{device} held by {held.get(device)} and {consumer}"
            held[device] = consumer
    assert wins > 0, outcomes
    assert {d: h for d, h in table.items() if h is not None} == held
    assert view.usages["CUSTOM_PMEM"] == wins <= 3
