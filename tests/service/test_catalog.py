"""Listing what the ledger holds: providers (deleted ones gone), consumers with their
owners, migrations (all, or only those in flight), and UUID prefixes resolved or refused."""

from __future__ import annotations

import pytest

from allocation_ledger import InvalidRequest, Ledger, UnknownPrefix
from allocation_ledger.application.catalog import resolve
from tests.builders import PROJECT, USER, a_host, new_id


def test_providers_are_listed_with_their_tree_and_deleted_ones_left_out(ledger: Ledger) -> None:
    root = a_host(ledger, name="compute-1")
    child = new_id()
    ledger.register_provider(child, "compute-1-numa0", parent_uuid=root)
    gone = a_host(ledger, name="gone")
    ledger.delete_provider(gone, ledger.provider(gone).generation)

    listed = ledger.providers()
    assert list(listed) == [root, child]
    assert (listed[child].name, listed[child].parent_uuid, listed[child].root_uuid) == (
        "compute-1-numa0", root, root)
    assert listed[root].parent_uuid is None


def test_consumers_and_migrations_are_listed_and_only_open_moves_are_in_flight(
        ledger: Ledger) -> None:
    src, dst = a_host(ledger), a_host(ledger)
    vm, other = new_id(), new_id()
    gen = ledger.claim(vm, {src: {"VCPU": 1}}, None, project_id=PROJECT, user_id=USER,
                       consumer_type="INSTANCE").generation
    done, open_move = new_id(), new_id()
    ledger.swap(vm, done, gen or 0, kind="resize")
    ledger.claim(vm, {dst: {"VCPU": 1}}, None, project_id=PROJECT, user_id=USER)
    ledger.confirm(done, ledger.migration(done).generation or 0)
    view = ledger.claim(other, {src: {"VCPU": 1}}, None, project_id="p2", user_id="u2")
    ledger.swap(other, open_move, view.generation or 0, kind="migration")

    consumers = ledger.consumers()
    assert set(consumers) == {vm, other, done, open_move}
    assert (consumers[other].project_id, consumers[other].user_id) == ("p2", "u2")
    assert consumers[done].migration and not consumers[vm].migration
    assert ledger.migration_ids() == [done, open_move]
    assert [m.migration_uuid for m in ledger.migrations_in_flight()] == [open_move]


def test_a_unique_prefix_names_its_uuid_and_others_are_refused() -> None:
    known = ["6ae32ac4-0000-4000-8000-000000000001", "6ae39999-0000-4000-8000-000000000002"]
    assert resolve("provider", "6AE32", known) == known[0]
    assert resolve("provider", known[1], known) == known[1]
    with pytest.raises(InvalidRequest, match="ambiguous: 2 match"):
        resolve("provider", "6ae3", known)
    with pytest.raises(UnknownPrefix, match="no provider starts with '7'"):
        resolve("provider", "7", known)
    with pytest.raises(InvalidRequest, match="neither a UUID nor a UUID prefix"):
        resolve("provider", "compute-1", known)
