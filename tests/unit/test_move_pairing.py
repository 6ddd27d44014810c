"""The rule that pairs an imported migration consumer with its instance
(:mod:`allocation_ledger.domain.move_pairing`), case by case."""

from __future__ import annotations

from allocation_ledger.domain.move_pairing import TYPED, UNTYPED, Pair, Seen, pair

SOURCE = {"host-a": {"VCPU": 2}}
DEST = {"host-b": {"VCPU": 4}}


def seen(uuid: str, kind: str | None, allocations: dict[str, dict[str, int]] | None = None,
         owner: tuple[str, str] = ("p", "u")) -> Seen:
    return Seen(uuid, owner[0], owner[1], kind, SOURCE if allocations is None else allocations)


def test_a_typed_migration_pairs_with_the_one_younger_consumer_of_its_owner() -> None:
    consumers = [seen("older", "INSTANCE"), seen("m", "MIGRATION"),
                 seen("other-owner", "INSTANCE", DEST, ("q", "u")),
                 seen("emptied", "INSTANCE", {}), seen("i", "INSTANCE", DEST)]
    assert pair(consumers) == ([Pair("m", "i", TYPED)], [])


def test_an_untyped_instance_pairs_with_a_typed_migration() -> None:
    assert pair([seen("m", "MIGRATION"), seen("i", None, DEST)]) == (
        [Pair("m", "i", TYPED)], [])


def test_a_migration_with_no_instance_or_several_stays_unpaired_with_the_reason() -> None:
    pairs, unpaired = pair([seen("m", "MIGRATION"), seen("i", "INSTANCE", {})])
    assert pairs == [] and [u.migration_uuid for u in unpaired] == ["m"]
    assert "has not claimed a destination" in unpaired[0].reason
    pairs, unpaired = pair([seen("m", "MIGRATION"), seen("i1", "INSTANCE", DEST),
                            seen("i2", "INSTANCE", DEST)])
    assert pairs == [] and "2 consumers" in unpaired[0].reason
    assert "i1, i2" in unpaired[0].reason


def test_two_migrations_wanting_one_instance_both_stay_unpaired() -> None:
    pairs, unpaired = pair([seen("m1", "MIGRATION"), seen("m2", "MIGRATION"),
                            seen("i", "INSTANCE", DEST)])
    assert pairs == [] and sorted(u.migration_uuid for u in unpaired) == ["m1", "m2"]
    assert all("only candidate of 2 migrations" in u.reason for u in unpaired)


def test_untyped_consumers_pair_only_when_asked_and_only_two_of_an_owner() -> None:
    two = [seen("m", None), seen("i", None, DEST)]
    assert pair(two) == ([], [])  # Placement cannot tell them from two instances
    assert pair(two, untyped=True) == ([Pair("m", "i", UNTYPED)], [])
    three = [seen("a", None), seen("b", None, DEST), seen("c", None, DEST)]
    assert pair(three, untyped=True) == ([], [])  # ambiguous: nothing is assumed
    typed = [seen("m", "MIGRATION"), seen("i", None, DEST), seen("j", None, DEST)]
    assert pair(typed, untyped=True)[0] == []  # the typed one is ambiguous; i, j are not
    # paired with each other either: i is a candidate instance of a typed migration
    assert pair([seen("m", "MIGRATION"), seen("x", None, DEST, ("q", "v")),
                 seen("i", None, DEST), seen("y", None, DEST, ("q", "v"))], untyped=True)[0] \
        == [Pair("m", "i", TYPED), Pair("x", "y", UNTYPED)]
