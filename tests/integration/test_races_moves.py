"""Racing a confirm against a revert of one migration on PostgreSQL (docs/guarantees.md §3, §4): a
migration resolves at most once, so exactly one wins, the other gets a
:class:`ConsumerGenerationConflict` or :class:`InvalidTransition`, and the ledger is
exactly the winner's outcome, never a mix of both and never a leaked allocation. And a
confirm racing the instance's destination re-claim, which moves the migration's stream by a
context event only: the confirm is never a conflict."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from allocation_ledger import Ledger
from tests.builders import PROJECT, USER, a_host, an_instance, new_id
from tests.integration import racing
from tests.integration.racing import Call, overlapped, tally
from tests.invariants import assert_invariants

pytestmark = pytest.mark.postgres

# Each race runs a short version in the default run and its long trial (100 rounds) with
# --slow; ids stay deterministic for xdist.
ROUNDS = [pytest.param(10, id="10-rounds"),
          pytest.param(100, id="100-rounds", marks=pytest.mark.slow)]
KINDS = ["threads", "processes"]
FLAVOUR = {"VCPU": 2, "MEMORY_MB": 1024}


@pytest.fixture(scope="module")
def arena() -> Iterator[racing.Arena]:
    """One schema, ledger, thread racer and worker processes for the whole module."""
    with racing.arena() as found:
        yield found
        assert_invariants(found.ledger)


@dataclass(frozen=True)
class Move:
    """A cold migration waiting for confirm or revert: the instance holds the destination,
    the migration the source."""

    source: str
    destination: str
    instance: str
    migration: str
    migration_generation: int
    instance_generation: int


def a_move_in_flight(ledger: Ledger) -> Move:
    """Spawn on a source host, swap to a migration, claim a destination host."""
    source, destination = a_host(ledger, vcpu=8), a_host(ledger, vcpu=8)
    vm = an_instance(ledger, {source: FLAVOUR})
    migration = new_id()
    assert vm.generation is not None
    ledger.swap(vm.consumer_uuid, migration, vm.generation, kind="migration")
    claimed = ledger.claim(vm.consumer_uuid, {destination: FLAVOUR}, None,
                           project_id=PROJECT, user_id=USER)
    generation = ledger.migration(migration).generation
    assert generation is not None and claimed.generation is not None
    return Move(source, destination, vm.consumer_uuid, migration, generation,
                claimed.generation)


@pytest.mark.parametrize("rounds", ROUNDS)
@pytest.mark.parametrize("kind", KINDS)
def test_confirm_and_revert_of_one_migration_exactly_one_wins(
    arena: racing.Arena, kind: str, rounds: int
) -> None:
    ledger, racer = arena.ledger, arena.racer(kind)
    counts: dict[str, int] = {}
    won_by: dict[str, int] = {}
    contended = 0
    rng = random.Random(7)
    for round_no in range(rounds):
        start = arena.position()
        move = a_move_in_flight(ledger)
        # Confirm is the smaller write and would nearly always win: a random head start for
        # revert in half the rounds makes both outcomes happen (and both get checked).
        head_start = rng.uniform(0, 0.006) if round_no % 4 < 2 else 0.0
        calls = {
            "confirm": Call("confirm", (move.migration, move.migration_generation),
                            delay=head_start),
            "revert": Call("revert", (move.migration, move.migration_generation,
                                      move.instance_generation)),
        }
        # Alternate who goes first, so neither racer slot (thread or process) is favoured.
        order = ["confirm", "revert"] if round_no % 2 else ["revert", "confirm"]
        outcomes = dict(zip(order, racer.race([calls[a] for a in order]), strict=True))
        tally(list(outcomes.values()), counts)
        contended += overlapped(list(outcomes.values()))

        winners = [action for action, o in outcomes.items() if o.ok]
        assert len(winners) == 1, outcomes
        winner = winners[0]
        won_by[winner] = won_by.get(winner, 0) + 1
        loser = outcomes["revert" if winner == "confirm" else "confirm"]
        status = "confirmed" if winner == "confirm" else "reverted"
        if loser.error == "ConsumerGenerationConflict":
            assert dict(loser.fields) == {"consumer_uuid": move.migration,
                                          "expected": move.migration_generation,
                                          "actual": None}, loser
        else:
            assert loser.error == "InvalidTransition", loser
            assert (loser.fields["migration_uuid"], loser.fields["status"]) == (
                move.migration, status), loser
        assert_winners_outcome(ledger, move, winner)
        arena.assert_round(start, [move.source, move.destination])
    print(f"\nconfirm vs revert ({kind} x {rounds}): {counts}, won by {won_by}, "
          f"both in flight together in {contended} rounds")
    assert contended > rounds // 4, "the racers hardly overlapped: nothing was raced"
    assert set(won_by) == {"confirm", "revert"}, "only one outcome was ever checked"


def assert_winners_outcome(ledger: Ledger, move: Move, winner: str) -> None:
    """The ledger holds exactly what ``winner`` leaves, and nothing of the other."""
    migration = ledger.migration(move.migration)
    instance = ledger.consumer(move.instance)
    assert (migration.allocations, migration.devices) == ({}, {})
    used = {move.source: ledger.provider(move.source).usages,
            move.destination: ledger.provider(move.destination).usages}
    idle = {"VCPU": 0, "MEMORY_MB": 0}
    if winner == "confirm":
        assert migration.status == "confirmed"
        assert (instance.generation, instance.allocations) == (
            move.instance_generation, {move.destination: FLAVOUR})
        assert used == {move.source: idle, move.destination: FLAVOUR}
    else:
        assert migration.status == "reverted"
        assert (instance.generation, instance.allocations) == (
            move.instance_generation + 1, {move.source: FLAVOUR})
        assert used == {move.source: FLAVOUR, move.destination: idle}
    assert instance.migration_uuid is None


BIGGER = {"VCPU": 3, "MEMORY_MB": 1024}


@pytest.mark.parametrize("rounds", ROUNDS)
@pytest.mark.parametrize("kind", KINDS)
def test_confirm_racing_a_destination_reclaim_is_never_a_conflict(
    arena: racing.Arena, kind: str, rounds: int
) -> None:
    """The instance re-claims its destination while the migration is confirmed with the
    generation read after the swap. The re-claim names only the instance, so it changes no
    generation the confirm depends on: a confirm that finds the migration's stream moved
    by it runs again inside the ledger and succeeds. The re-claim succeeds too, or loses
    with a conflict on the migration when the confirm landed between its read and its
    save. Either way the ledger holds what the successful commands leave."""
    ledger, racer = arena.ledger, arena.racer(kind)
    counts: dict[str, int] = {}
    contended = reclaimed = 0
    rng = random.Random(11)
    for round_no in range(rounds // 2):
        start = arena.position()
        move = a_move_in_flight(ledger)
        assert move.migration_generation == 1
        head_start = rng.uniform(0, 0.004) if round_no % 2 else 0.0
        confirm = Call("confirm", (move.migration, 1), delay=head_start)
        reclaim = Call("claim", (move.instance, {move.destination: BIGGER},
                                 move.instance_generation),
                       {"project_id": PROJECT, "user_id": USER})
        outcomes = racer.race([confirm, reclaim])
        tally(outcomes, counts)
        contended += overlapped(outcomes)
        confirmed, claimed = outcomes
        assert confirmed.ok, confirmed
        if not claimed.ok:
            assert (claimed.error, dict(claimed.fields)) == (
                "ConsumerGenerationConflict",
                {"consumer_uuid": move.migration, "expected": 1, "actual": None}), claimed
        reclaimed += claimed.ok
        held = BIGGER if claimed.ok else FLAVOUR
        instance = ledger.consumer(move.instance)
        assert (instance.generation, instance.allocations) == (
            move.instance_generation + claimed.ok, {move.destination: held})
        assert ledger.migration(move.migration).status == "confirmed"
        assert ledger.provider(move.source).usages == {"VCPU": 0, "MEMORY_MB": 0}
        assert ledger.provider(move.destination).usages == held
        arena.assert_round(start, [move.source, move.destination])
    print(f"\nconfirm vs destination re-claim ({kind} x {rounds // 2}): {counts}, "
          f"both in flight together in {contended} rounds")
    assert contended > rounds // 8, "the racers hardly overlapped: nothing was raced"
    assert reclaimed, "the re-claim never succeeded: nothing was checked"
