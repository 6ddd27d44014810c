"""The rule that tells Nova's moves from plain allocation writes (``domain/nova_moves.py``),
as a table: the write's entries and the consumers' state -> the move command, or none."""

from __future__ import annotations

from dataclasses import replace

import pytest

from allocation_ledger.domain.nova_moves import (
    Abort,
    Confirm,
    Entry,
    Held,
    Move,
    NovaMove,
    Revert,
    Swap,
    named,
    recognise,
    recognise_delete,
)

VM, M, X = "instance", "migration", "other"
SOURCE = {"host": {"VCPU": 2, "MEMORY_MB": 512}}
DEST = {"dest": {"VCPU": 2, "MEMORY_MB": 512}}

INSTANCE = Held(VM, True, 3, SOURCE, "p", "u")
NEW = Held(M, False, None, {})
IN_FLIGHT = Move(VM, "migration", True, False)
MIGRATION = Held(M, True, 1, SOURCE, "p", "u", move=IN_FLIGHT)
CLAIMED = replace(MIGRATION, move=replace(IN_FLIGHT, destination_claimed=True))
MOVED = Held(VM, True, None, {}, "p", "u", moving=True)  # the instance after the swap
AT_DEST = Held(VM, True, 5, DEST, "p", "u", moving=True)


def empty(uuid: str, generation: int | None, consumer_type: str | None = None) -> Entry:
    return Entry(uuid, {}, generation, "p", "u", consumer_type)


def given(uuid: str, allocations: dict[str, dict[str, int]], generation: int | None = None,
          project: str = "p", consumer_type: str | None = None) -> Entry:
    return Entry(uuid, allocations, generation, project, "u", consumer_type)


@pytest.mark.parametrize(("entries", "held", "expected"), [
    # Nova's move_allocations(instance, migration): the swap
    ([empty(VM, 3), given(M, SOURCE)], [INSTANCE, NEW], Swap(VM, M, 3)),
    ([given(M, SOURCE), empty(VM, 3)], [INSTANCE, NEW], Swap(VM, M, 3)),
    ([empty(VM, 3, "INSTANCE"), given(M, SOURCE, consumer_type="MIGRATION")],
     [INSTANCE, NEW], Swap(VM, M, 3)),
    # the stale generation goes to the command, which refuses it
    ([empty(VM, 2), given(M, SOURCE)], [INSTANCE, NEW], Swap(VM, M, 2)),
    # look-alikes: not exactly what the instance held, another owner, a target that
    # exists or was written before, a generation for the new consumer, a type that says
    # otherwise, an instance already moving
    ([empty(VM, 3), given(M, {"host": {"VCPU": 2}})], [INSTANCE, NEW], None),
    ([empty(VM, 3), given(M, SOURCE, project="q")], [INSTANCE, NEW], None),
    ([empty(VM, 3), given(M, SOURCE)], [INSTANCE, replace(NEW, written=True)], None),
    ([empty(VM, 3), given(M, SOURCE, 1)], [INSTANCE, NEW], None),
    ([empty(VM, 3), given(M, SOURCE, consumer_type="INSTANCE")], [INSTANCE, NEW], None),
    ([empty(VM, 3, "MIGRATION"), given(M, SOURCE)], [INSTANCE, NEW], None),
    ([empty(VM, 3), given(M, SOURCE)], [replace(INSTANCE, moving=True), NEW], None),
    ([empty(VM, None), given(M, SOURCE)], [INSTANCE, NEW], None),
    # Nova's move_allocations(migration, instance): the revert, with or without a
    # destination claimed
    ([empty(M, 1), given(VM, SOURCE, 5)], [CLAIMED, AT_DEST], Revert(M, 1, 5)),
    ([empty(M, 1), given(VM, SOURCE)], [MIGRATION, MOVED], Revert(M, 1, None)),
    ([empty(M, 1), given(VM, DEST, 5)], [CLAIMED, AT_DEST], None),
    ([empty(M, 1), given(X, SOURCE)], [CLAIMED, Held(X, False, None, {})], None),
    ([empty(M, 1), given(VM, SOURCE, 5)],
     [replace(CLAIMED, move=replace(CLAIMED.move or IN_FLIGHT, in_flight=False)), AT_DEST],
     None),
    ([empty(M, 1), given(VM, SOURCE, 5)],
     [replace(CLAIMED, move=replace(IN_FLIGHT, kind="evacuation")), AT_DEST], None),
    # emptying the migration: confirm with a destination, else the release of the move
    ([empty(M, 1)], [CLAIMED], Confirm(M, 1)),
    ([empty(M, 1)], [MIGRATION], Abort(M, 1)),
    ([empty(VM, 3)], [INSTANCE], None),
    # shapes that are never a move
    ([given(VM, SOURCE, 3), given(M, SOURCE)], [], None),
    ([empty(VM, 3), empty(M, 1)], [], None),
    ([empty(VM, 3), given(M, SOURCE), given(X, DEST)], [], None),
])
def test_recognise(entries: list[Entry], held: list[Held], expected: NovaMove | None) -> None:
    by_uuid = {h.consumer_uuid: h for h in held}
    assert set(named(entries)) <= set(by_uuid)
    assert recognise(entries, by_uuid) == expected


def test_plain_shapes_need_no_read() -> None:
    assert named([given(VM, SOURCE, 3)]) == ()
    assert named([given(VM, SOURCE, 3), given(M, SOURCE)]) == ()
    assert named([empty(VM, None)]) == ()


@pytest.mark.parametrize(("held", "expected"), [
    (CLAIMED, Confirm(M, 1)),
    (MIGRATION, None),  # no destination: the release aborts it
    (INSTANCE, None),
    (replace(CLAIMED, move=replace(IN_FLIGHT, in_flight=False, destination_claimed=True)),
     None),
])
def test_recognise_delete(held: Held, expected: NovaMove | None) -> None:
    assert recognise_delete(held) == expected
