"""Racing claims on PostgreSQL (docs/guarantees.md §3): the last unit of a host goes to exactly one
claimant; many claimants never overfill a few hosts; two writers of one consumer at one
generation end with exactly one :class:`ConsumerGenerationConflict`. Each race runs on
threads sharing a ledger and on separate processes, each with its own ledger."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from allocation_ledger import Ledger
from tests.builders import a_host, an_instance, new_id
from tests.integration import racing
from tests.integration.racing import Call, claim_call, overlapped, tally
from tests.invariants import assert_invariants

pytestmark = pytest.mark.postgres

# Each race runs a short version in the default run and its long trial (100 rounds) with
# --slow; ids stay deterministic for xdist.
ROUNDS = [pytest.param(10, id="10-rounds"),
          pytest.param(100, id="100-rounds", marks=pytest.mark.slow)]
KINDS = ["threads", "processes"]
CAPACITY_REFUSALS = {"InsufficientCapacity", "ConcurrentUpdate"}


@pytest.fixture(scope="module")
def arena() -> Iterator[racing.Arena]:
    """One schema, ledger, thread racer and worker processes for the whole module."""
    with racing.arena() as found:
        yield found
        assert_invariants(found.ledger)


@pytest.mark.parametrize("rounds", ROUNDS)
@pytest.mark.parametrize("kind", KINDS)
def test_exactly_one_claimant_gets_the_last_unit(
        arena: racing.Arena, kind: str, rounds: int) -> None:
    ledger, racer = arena.ledger, arena.racer(kind)
    counts: dict[str, int] = {}
    contended = 0
    for _ in range(rounds):
        start = arena.position()
        host = a_host(ledger, vcpu=4, memory_mb=4096)
        an_instance(ledger, {host: {"VCPU": 3}})
        want = {host: {"VCPU": 1, "MEMORY_MB": 256}}
        claimants = [new_id() for _ in range(racer.parties)]
        outcomes = racer.race([claim_call(c, want) for c in claimants])
        tally(outcomes, counts)
        contended += overlapped(outcomes)

        winners = [c for c, o in zip(claimants, outcomes, strict=True) if o.ok]
        assert len(winners) == 1, outcomes
        for claimant, outcome in zip(claimants, outcomes, strict=True):
            if outcome.ok:
                continue
            assert outcome.error in CAPACITY_REFUSALS, outcome
            if outcome.error == "InsufficientCapacity":
                assert (outcome.fields["provider_uuid"], outcome.fields["resource_class"],
                        outcome.fields["used"], outcome.fields["capacity"]) == (
                            host, "VCPU", 4, 4), outcome
            assert ledger.consumer(claimant).generation is None
        assert ledger.consumer(winners[0]).allocations == want
        assert ledger.provider(host).usages == {"VCPU": 4, "MEMORY_MB": 256}
        arena.assert_round(start, [host])
    print(f"\nlast unit ({kind}, {racer.parties} racers x {rounds}): {counts}, "
          f"all in flight together in {contended} rounds")
    assert counts["ok"] == rounds
    assert contended > rounds // 4, "the racers hardly overlapped: nothing was raced"


@pytest.mark.parametrize("kind", KINDS)
def test_many_claimants_on_a_few_hosts_never_overfill_them(
    arena: racing.Arena, kind: str
) -> None:
    ledger, racer = arena.ledger, arena.racer(kind)
    start = arena.position()
    hosts = [a_host(ledger, vcpu=24, memory_mb=24576) for _ in range(3)]
    seeds = [100 * KINDS.index(kind) + i for i in range(racer.parties)]
    outcomes = racer.race([Call("claim_many", (hosts, 60, seed)) for seed in seeds])
    assert all(o.ok for o in outcomes), [o for o in outcomes if not o.ok]

    held: dict[str, dict[str, dict[str, int]]] = {}
    refused: dict[str, int] = {}
    for outcome in outcomes:
        held.update(outcome.value["held"])
        for name, n in outcome.value["refused"].items():
            refused[name] = refused.get(name, 0) + n
    assert set(refused) <= CAPACITY_REFUSALS, refused
    # Demand is several times capacity: the capacity check must really have refused some.
    assert refused.get("InsufficientCapacity", 0) > 0, refused
    expected = _usage_of(held, hosts)
    for host in hosts:
        view = ledger.provider(host)
        assert view.usages == expected[host], host
        assert all(c.used <= c.capacity for c in view.classes.values()), view.classes
    for consumer, allocations in held.items():
        assert ledger.consumer(consumer).allocations == allocations
    arena.assert_round(start, hosts)
    print(f"\nmany claimants ({kind}, {racer.parties} racers): {len(held)} held, "
          f"refused {refused}, usage {expected}")


def _usage_of(held: dict[str, dict[str, dict[str, int]]],
              hosts: list[str]) -> dict[str, dict[str, int]]:
    usage: dict[str, dict[str, int]] = {h: {"VCPU": 0, "MEMORY_MB": 0} for h in hosts}
    for allocations in held.values():
        for host, resources in allocations.items():
            for rc, amount in resources.items():
                usage[host][rc] += amount
    return usage


def _existing(ledger: Ledger, host: str) -> tuple[str, int | None]:
    vm = an_instance(ledger, {host: {"VCPU": 2}})
    return vm.consumer_uuid, vm.generation


def _new(ledger: Ledger, host: str) -> tuple[str, int | None]:
    return new_id(), None


@pytest.mark.parametrize("rounds", ROUNDS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("consumer_is", ["existing", "new"])
def test_two_writers_at_one_generation_exactly_one_conflicts(
    arena: racing.Arena, kind: str, rounds: int, consumer_is: str
) -> None:
    ledger, racer = arena.ledger, arena.racer(kind)
    make: Callable[[Ledger, str], tuple[str, int | None]] = (
        _existing if consumer_is == "existing" else _new)
    counts: dict[str, int] = {}
    in_store = 0
    for _ in range(rounds):
        start = arena.position()
        host = a_host(ledger, vcpu=16)
        consumer, generation = make(ledger, host)
        wants = [{host: {"VCPU": 3}}, {host: {"VCPU": 4}}]
        outcomes = racer.race([claim_call(consumer, w, generation) for w in wants])
        tally(outcomes, counts)

        assert sorted(o.ok for o in outcomes) == [False, True], outcomes
        won = 0 if outcomes[0].ok else 1
        loser = outcomes[1 - won]
        after = 1 if generation is None else generation + 1
        assert loser.error == "ConsumerGenerationConflict", loser
        assert dict(loser.fields) == {"consumer_uuid": consumer, "expected": generation,
                                      "actual": after}, loser
        in_store += loser.in_store
        view = ledger.consumer(consumer)
        assert (view.generation, view.allocations) == (after, wants[won])
        assert ledger.provider(host).usages["VCPU"] == wants[won][host]["VCPU"]
        arena.assert_round(start, [host])
    print(f"\nsame generation ({kind}, {consumer_is}): {counts}, "
          f"{in_store} conflicts found by the store's unique key")
    assert in_store > 0, "every loser saw the winner before writing: nothing was raced"


@pytest.mark.parametrize("kind", KINDS)
def test_writers_opening_one_schema_together_all_start(arena: racing.Arena, kind: str) -> None:
    racer = arena.racer(kind)
    url = racing.with_pool(arena.url, 1, 0)
    failures: list[racing.Outcome] = []
    for _ in range(20):
        outcomes = racer.race([Call("open_and_close", (url,))] * racer.parties)
        failures += [o for o in outcomes if not o.ok]
    assert not failures, f"{len(failures)} of {20 * racer.parties} opens failed: {failures[0]}"
