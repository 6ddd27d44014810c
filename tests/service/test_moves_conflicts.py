"""Generation conflicts and refused transitions during moves (Nova's
``ConsumerGenerationConflictTest`` and ``domain/consumer-generation-conflicts.txt``).

Each conflict comes two ways: a stale generation passed in (refused before writing), and a
real race where another writer appends between the command's reads and its save (refused by
the event store's unique key). Either way the losing command writes nothing, the caller
re-reads and tries again, and nothing is retried for it. A clash on a provider alone is
retried inside the ledger.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.domain.errors import (
    ConsumerGenerationConflict,
    InsufficientCapacity,
    InvalidRequest,
    InvalidTransition,
    MigrationInProgress,
    MigrationNotFound,
)
from tests.builders import new_id
from tests.service.moving import (
    FLAVOR1,
    FLAVOR2,
    FLAVOR3,
    Expectation,
    Move,
    another_writer_first,
    assert_loses_race,
    assert_refused,
    assert_writes_nothing,
    claim,
    fields,
    moved_to_other_host,
    spawn,
)

CONFLICT = ("consumer_uuid", "expected", "actual")


@pytest.fixture
def other(url: str, ledger: Ledger) -> Iterator[Ledger]:
    """Another service process on the same store (the same ledger for the in-memory one):
    the competing writer of the races below."""
    if url.startswith("memory"):
        yield ledger
        return
    with open_ledger(url) as second:
        yield second


def _waiting(ledger: Ledger) -> tuple[Move, Expectation]:
    """A resize waiting for confirmation, and the expectation that describes it."""
    m = moved_to_other_host(ledger)
    return m, ({m.host1: FLAVOR1, m.host2: FLAVOR2},
               {m.vm: ({m.host2: FLAVOR2}, 3), m.mig: ({m.host1: FLAVOR1}, 1)},
               {m.mig: "in-progress"})


def _resize_again_on_destination(ledger: Ledger, m: Move) -> object:
    """Another writer changes the server's destination claim (the migration's context
    records it, its generation stays)."""
    return claim(ledger, m.vm, {m.host2: FLAVOR3}, 3)


def _loses_to_a_resize_on_destination(
    ledger: Ledger, other: Ledger, command: Callable[[Move], object]
) -> tuple[Move, ConsumerGenerationConflict]:
    """A resize waits for confirmation; ``other`` resizes the server again on its destination
    between ``command``'s reads and its save, so ``command`` conflicts and writes nothing."""
    m, _ = _waiting(ledger)
    err = assert_loses_race(ledger, ConsumerGenerationConflict,
                            lambda: _resize_again_on_destination(other, m),
                            lambda: command(m))
    return m, err


def _swapped_again(ledger: Ledger) -> tuple[Move, str, Expectation]:
    """A resize reverted, then the server swapped to a new migration whose destination is
    not claimed yet: the move, the new migration's uuid and the expectation describing it."""
    m = moved_to_other_host(ledger)
    ledger.revert(m.mig, 1, 3)
    mig = new_id()
    ledger.swap(m.vm, mig, 4)
    return m, mig, ({m.host1: FLAVOR1}, {m.vm: ({}, None), mig: ({m.host1: FLAVOR1}, 1)},
                    {mig: "in-progress"})


def _expect_after_other_writer(m: Move) -> None:
    m.scene.expect({m.host1: FLAVOR1, m.host2: FLAVOR3},
                   {m.vm: ({m.host2: FLAVOR3}, 4), m.mig: ({m.host1: FLAVOR1}, 1)},
                   {m.mig: "in-progress"})


# -- swap ------------------------------------------------------------------------------------


def test_swap_with_a_stale_generation(ledger: Ledger) -> None:
    """The server changed since it was read: no migration is started."""
    m = moved_to_other_host(ledger)
    ledger.confirm(m.mig, 1)
    vm, host2, mig = m.vm, m.host2, new_id()
    m.scene.expect({host2: FLAVOR2}, {vm: ({host2: FLAVOR2}, 3)}, {m.mig: "confirmed"})

    err = assert_refused(ledger, ConsumerGenerationConflict, lambda: ledger.swap(vm, mig, 1))
    assert fields(err, *CONFLICT) == (vm, 1, 3)
    assert "expected 1, actual 3" in str(err)
    with pytest.raises(MigrationNotFound):
        ledger.migration(mig)
    m.scene.expect({host2: FLAVOR2}, {vm: ({host2: FLAVOR2}, 3), mig: ({}, None)})


def test_swap_loses_a_race(ledger: Ledger, other: Ledger) -> None:
    """Another write lands on the server between the swap's read and its append: the
    migration's first event is not stored either (one atomic append)."""
    m = moved_to_other_host(ledger)
    ledger.confirm(m.mig, 1)
    vm, host2, mig = m.vm, m.host2, new_id()

    err = assert_loses_race(ledger, ConsumerGenerationConflict,
                            lambda: claim(other, vm, {host2: FLAVOR2}, 3),
                            lambda: ledger.swap(vm, mig, 3))
    assert fields(err, *CONFLICT) == (vm, 3, 4)
    with pytest.raises(MigrationNotFound):
        ledger.migration(mig)
    m.scene.expect({host2: FLAVOR2}, {vm: ({host2: FLAVOR2}, 4), mig: ({}, None)},
                   {m.mig: "confirmed"})

    ledger.swap(vm, mig, 4)  # re-read, re-decide
    m.scene.expect({host2: FLAVOR2}, {vm: ({}, None), mig: ({host2: FLAVOR2}, 1)},
                   {mig: "in-progress"})


# -- destination claim -----------------------------------------------------------------------


def test_destination_claim_with_a_generation_is_a_conflict(ledger: Ledger) -> None:
    """After the swap the server holds nothing: its destination claim must expect None."""
    m, _, swapped = _swapped_again(ledger)
    vm, host2 = m.vm, m.host2
    m.scene.expect(*swapped)

    err = assert_refused(ledger, ConsumerGenerationConflict,
                         lambda: claim(ledger, vm, {host2: FLAVOR2}, 4))
    assert fields(err, *CONFLICT) == (vm, 4, None)
    m.scene.expect(*swapped)


def test_destination_claim_loses_a_race(ledger: Ledger, other: Ledger) -> None:
    """Two destination claims for one server: the second one is refused, not merged."""
    m, mig, _ = _swapped_again(ledger)
    vm, host1, host2 = m.vm, m.host1, m.host2

    err = assert_loses_race(ledger, ConsumerGenerationConflict,
                            lambda: claim(other, vm, {host2: FLAVOR1}, None),
                            lambda: claim(ledger, vm, {host2: FLAVOR2}, None))
    assert fields(err, *CONFLICT) == (vm, None, 6)
    m.scene.expect({host1: FLAVOR1, host2: FLAVOR1},
                   {vm: ({host2: FLAVOR1}, 6), mig: ({host1: FLAVOR1}, 1)},
                   {mig: "in-progress"})
    assert ledger.migration(mig).new_allocations == {host2: FLAVOR1}


# -- confirm and revert ----------------------------------------------------------------------


def test_confirm_with_a_stale_generation_changes_nothing(ledger: Ledger) -> None:
    """Unlike Nova, no leaked migration allocation: everything stays as it was."""
    m, waiting = _waiting(ledger)
    err = assert_refused(ledger, ConsumerGenerationConflict, lambda: ledger.confirm(m.mig, 2))
    assert fields(err, *CONFLICT) == (m.mig, 2, 1)
    m.scene.expect(*waiting)

    ledger.confirm(m.mig, 1)
    m.scene.expect({m.host2: FLAVOR2}, {m.vm: ({m.host2: FLAVOR2}, 3), m.mig: ({}, None)},
                   {m.mig: "confirmed"})


def test_confirm_loses_a_race(ledger: Ledger, other: Ledger) -> None:
    """The move was reverted while confirming: a conflict (the migration now holds
    nothing), and re-reading shows why."""
    m, _ = _waiting(ledger)
    err = assert_loses_race(ledger, ConsumerGenerationConflict,
                            lambda: other.revert(m.mig, 1, 3),
                            lambda: ledger.confirm(m.mig, 1))
    assert fields(err, *CONFLICT) == (m.mig, 1, None)
    m.scene.expect({m.host1: FLAVOR1}, {m.vm: ({m.host1: FLAVOR1}, 4), m.mig: ({}, None)},
                   {m.mig: "reverted"})
    assert_refused(ledger, InvalidTransition, lambda: ledger.confirm(m.mig, 1))


def test_confirm_runs_again_when_only_the_destination_changed(ledger: Ledger,
                                                               other: Ledger) -> None:
    """The server re-claimed its destination while confirming: the migration's stream
    moved by a context event only, which changed no generation the confirm depends on, so
    the ledger runs the confirm again (like a provider clash) and it confirms the new
    destination."""
    m, _ = _waiting(ledger)
    with another_writer_first(ledger, lambda: _resize_again_on_destination(other, m)):
        ledger.confirm(m.mig, 1)
    m.scene.expect({m.host2: FLAVOR3}, {m.vm: ({m.host2: FLAVOR3}, 4), m.mig: ({}, None)},
                   {m.mig: "confirmed"})


@pytest.mark.parametrize(("migration_gen", "instance_gen", "stale"), [
    pytest.param(2, 3, ("mig", 2, 1), id="stale-migration"),
    pytest.param(1, 2, ("vm", 2, 3), id="stale-instance"),
    pytest.param(1, None, ("vm", None, 3), id="instance-not-empty"),
])
def test_revert_with_a_stale_generation_changes_nothing(
    ledger: Ledger, migration_gen: int, instance_gen: int | None,
    stale: tuple[str, int | None, int],
) -> None:
    """Either party's generation is checked; nothing leaks either way."""
    m, waiting = _waiting(ledger)
    err = assert_refused(ledger, ConsumerGenerationConflict,
                         lambda: ledger.revert(m.mig, migration_gen, instance_gen))
    who, expected, actual = stale
    assert fields(err, *CONFLICT) == (getattr(m, who), expected, actual)
    m.scene.expect(*waiting)

    ledger.revert(m.mig, 1, 3)
    m.scene.expect({m.host1: FLAVOR1}, {m.vm: ({m.host1: FLAVOR1}, 4), m.mig: ({}, None)},
                   {m.mig: "reverted"})


def test_revert_loses_a_race(ledger: Ledger, other: Ledger) -> None:
    """The server re-claimed its destination under the revert: the server's generation
    moved (the migration's did not), so the conflict names the server; nothing is written."""
    m, err = _loses_to_a_resize_on_destination(ledger, other,
                                               lambda move: ledger.revert(move.mig, 1, 3))
    assert fields(err, *CONFLICT) == (m.vm, 3, 4)
    _expect_after_other_writer(m)

    ledger.revert(m.mig, 1, 4)
    m.scene.expect({m.host1: FLAVOR1}, {m.vm: ({m.host1: FLAVOR1}, 5), m.mig: ({}, None)},
                   {m.mig: "reverted"})


# -- delete ----------------------------------------------------------------------------------


def test_delete_with_a_stale_generation_then_force_delete(ledger: Ledger) -> None:
    """``DELETE /servers`` fails on a conflict; ``forceDelete`` ignores the generation and
    still frees both hosts and aborts the migration."""
    m, waiting = _waiting(ledger)
    err = assert_refused(ledger, ConsumerGenerationConflict, lambda: ledger.release(m.vm, 1))
    assert fields(err, *CONFLICT) == (m.vm, 1, 3)
    m.scene.expect(*waiting)

    assert ledger.force_release(m.vm) is True
    m.scene.expect({}, {m.vm: ({}, None), m.mig: ({}, None)}, {m.mig: "aborted"})

    # A second force delete finds nothing to do and writes nothing.
    assert assert_writes_nothing(ledger, lambda: ledger.force_release(m.vm)) is False
    m.scene.expect({}, {m.vm: ({}, None), m.mig: ({}, None)}, {m.mig: "aborted"})


def test_delete_loses_a_race_then_force_delete(ledger: Ledger, other: Ledger) -> None:
    """The server's allocation changed while deleting: the delete is refused, the forced
    one goes through."""
    m, _ = _waiting(ledger)
    err = assert_loses_race(ledger, ConsumerGenerationConflict,
                            lambda: _resize_again_on_destination(other, m),
                            lambda: ledger.release(m.vm, 3))
    assert fields(err, *CONFLICT) == (m.vm, 3, 4)
    _expect_after_other_writer(m)

    assert ledger.force_release(m.vm) is True
    m.scene.expect({}, {m.vm: ({}, None), m.mig: ({}, None)}, {m.mig: "aborted"})


# -- clashes on providers alone are retried --------------------------------------------------


def test_confirm_retries_a_clash_on_the_source_host_alone(ledger: Ledger,
                                                          other: Ledger) -> None:
    """Another server booted on the source meanwhile: only a provider stream clashed, so
    the ledger runs the confirm again and it succeeds."""
    m, _ = _waiting(ledger)
    neighbour = new_id()
    with another_writer_first(ledger, lambda: spawn(other, neighbour, {m.host1: FLAVOR2})):
        ledger.confirm(m.mig, 1)
    m.scene.expect({m.host1: FLAVOR2, m.host2: FLAVOR2},
                   {m.vm: ({m.host2: FLAVOR2}, 3), m.mig: ({}, None),
                    neighbour: ({m.host1: FLAVOR2}, 1)}, {m.mig: "confirmed"})


def test_destination_claim_retried_after_a_clash_rechecks_capacity(ledger: Ledger,
                                                                   other: Ledger) -> None:
    """Another server took the destination's room meanwhile: the retried claim sees it and
    is refused; only the other server's claim is stored."""
    m = moved_to_other_host(ledger)
    ledger.revert(m.mig, 1, 3)
    vm, host1, host2, mig, neighbour = m.vm, m.host1, m.host2, new_id(), new_id()
    ledger.swap(vm, mig, 4)
    room = {"VCPU": 7, "MEMORY_MB": 512, "DISK_GB": 1}  # leaves 1 VCPU of 8 on host2

    err = assert_loses_race(ledger, InsufficientCapacity,
                            lambda: spawn(other, neighbour, {host2: room}),
                            lambda: claim(ledger, vm, {host2: FLAVOR2}, None))
    assert fields(err, "provider_uuid", "resource_class", "free") == (host2, "VCPU", 1)
    m.scene.expect({host1: FLAVOR1, host2: room},
                   {vm: ({}, None), mig: ({host1: FLAVOR1}, 1), neighbour: ({host2: room}, 1)},
                   {mig: "in-progress"})


# -- refused transitions ---------------------------------------------------------------------


@pytest.mark.parametrize(("first", "then", "status"), [
    ("confirm", "revert", "confirmed"),
    ("revert", "confirm", "reverted"),
    ("confirm", "confirm", "confirmed"),
    ("revert", "revert", "reverted"),
])
def test_a_migration_resolves_once(ledger: Ledger, first: str, then: str, status: str) -> None:
    """Confirm after revert, revert after confirm, twice the same: InvalidTransition with
    a message naming the action, the migration and its status; nothing changes."""
    m, _ = _waiting(ledger)
    resolve = {"confirm": lambda: ledger.confirm(m.mig, 1),
               "revert": lambda: ledger.revert(m.mig, 1, 3)}
    resolve[first]()
    vm_after = ({m.host2: FLAVOR2}, 3) if first == "confirm" else ({m.host1: FLAVOR1}, 4)
    usage = vm_after[0]
    m.scene.expect(usage, {m.vm: vm_after, m.mig: ({}, None)}, {m.mig: status})

    err = assert_refused(ledger, InvalidTransition, resolve[then])
    assert str(err) == f"cannot {then} migration {m.mig}: it is {status}"
    assert fields(err, "migration_uuid", "status", "action") == (m.mig, status, then)
    m.scene.expect(usage, {m.vm: vm_after, m.mig: ({}, None)}, {m.mig: status})


def test_moves_refused_for_their_kind_or_state(ledger: Ledger) -> None:
    """Confirming with no destination, completing a resize, confirming an evacuation,
    moving a server twice at once, reusing a migration id: each refused, nothing written."""
    m, mig, swapped = _swapped_again(ledger)
    vm, host1, host2 = m.vm, m.host1, m.host2
    m.scene.expect(*swapped)

    err = assert_refused(ledger, InvalidRequest, lambda: ledger.confirm(mig, 1))
    assert "revert it instead" in str(err)
    wrong = assert_refused(ledger, InvalidTransition,
                           lambda: ledger.complete_evacuation(mig, 1))
    assert str(wrong) == f"cannot complete migration {mig}: it is in-progress (resize)"
    m.scene.expect(*swapped)

    ledger.revert(mig, 1, None)
    at_rest = ({host1: FLAVOR1}, {vm: ({host1: FLAVOR1}, 6), mig: ({}, None)}, {mig: "reverted"})
    m.scene.expect(*at_rest)
    err = assert_refused(ledger, InvalidRequest, lambda: ledger.swap(vm, m.mig, 6))
    assert "already exists" in str(err) and err.fields["migration_uuid"] == m.mig
    m.scene.expect(*at_rest)

    evacuation = new_id()
    ledger.evacuate(vm, evacuation, 6, destination={host2: FLAVOR1})
    both = {host1: FLAVOR1, host2: FLAVOR1}
    evacuating = (both, {vm: (both, 7), evacuation: ({}, None)}, {evacuation: "in-progress"})
    m.scene.expect(*evacuating)
    wrong = assert_refused(ledger, InvalidTransition, lambda: ledger.confirm(evacuation, 1))
    assert str(wrong) == (
        f"cannot confirm migration {evacuation}: it is in-progress (evacuation)")
    moving = assert_refused(ledger, MigrationInProgress, lambda: ledger.swap(vm, new_id(), 7))
    assert fields(moving, "instance_uuid", "migration_uuid") == (vm, evacuation)
    m.scene.expect(*evacuating)
