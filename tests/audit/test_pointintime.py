"""Point-in-time questions, with a frozen clock: before, between and after events, and across
a resize that is reverted."""

from __future__ import annotations

import pytest
from freezegun.api import FrozenDateTimeFactory

from allocation_ledger import Ledger
from allocation_ledger.audit.history import migration_history
from allocation_ledger.audit.pointintime import (
    consumer_at,
    cut,
    hosts_at,
    migration_at,
    provider_at,
)
from allocation_ledger.domain.errors import InvalidRequest, ProviderNotFound
from tests.audit.conftest import at
from tests.builders import PROJECT, USER, a_host, new_id

ALICE = {"actor": "alice", "request_id": "req-1", "reason": "spawn web-1"}
BOB = {"actor": "bob", "request_id": "req-2", "reason": "resize web-1 to m1.large"}


def _usage(ledger: Ledger, host: str, minutes: float) -> dict[str, int]:
    store = ledger.store
    return provider_at(store, host, cut(store, when=at(minutes))).value.usages


def test_state_before_between_and_after_events(
    ledger: Ledger, clock: FrozenDateTimeFactory
) -> None:
    host = a_host(ledger, vcpu=16, memory_mb=None)  # at 0
    vm = new_id()
    clock.move_to(at(10))
    ledger.claim(vm, {host: {"VCPU": 2}}, None, project_id=PROJECT, user_id=USER,
                 request=ALICE)
    clock.move_to(at(20))
    ledger.claim(vm, {host: {"VCPU": 6}}, 1, project_id=PROJECT, user_id=USER)
    clock.move_to(at(30))
    ledger.release(vm, 2)

    store = ledger.store
    with pytest.raises(ProviderNotFound):
        provider_at(store, host, cut(store, when=at(-1)))
    assert [_usage(ledger, host, m)["VCPU"] for m in (0, 5, 10, 15, 20, 25, 30, 99)] == [
        0, 0, 2, 2, 6, 6, 0, 0]
    views = [consumer_at(store, vm, cut(store, when=at(m))).value for m in (5, 15, 25, 35)]
    assert [(v.generation, v.allocations) for v in views] == [
        (None, {}), (1, {host: {"VCPU": 2}}), (2, {host: {"VCPU": 6}}), (None, {})]
    assert provider_at(store, host, cut(store, when=at(15))).value.generation == 2


def test_a_time_maps_to_the_last_position_at_or_before_it(
    ledger: Ledger, clock: FrozenDateTimeFactory
) -> None:
    a_host(ledger)  # positions 1 to 4 (the record, registered, inventory set, name taken)
    clock.move_to(at(10))
    a_host(ledger)  # positions 5 to 8
    store = ledger.store
    first, last = (store.recorder.select_notifications(1, 10)[i].id for i in (3, 7))
    assert cut(store, when=at(-1)) == 0
    assert cut(store, when=at(0)) == first
    assert cut(store, when=at(9)) == first
    assert cut(store, when=at(10)) == last
    assert cut(store) == last
    assert cut(store, position=1) == 1
    with pytest.raises(InvalidRequest):
        cut(store, position=1, when=at(1))


def test_state_across_a_resize_and_its_revert(
    ledger: Ledger, clock: FrozenDateTimeFactory
) -> None:
    src, dst = a_host(ledger, vcpu=8, memory_mb=None), a_host(ledger, vcpu=8, memory_mb=None)
    vm, migration = new_id(), new_id()
    clock.move_to(at(10))
    ledger.claim(vm, {src: {"VCPU": 2}}, None, project_id=PROJECT, user_id=USER,
                 request=ALICE)
    clock.move_to(at(20))
    ledger.swap(vm, migration, 1, kind="resize", request=BOB)
    clock.move_to(at(30))
    ledger.claim(vm, {dst: {"VCPU": 4}}, None, project_id=PROJECT, user_id=USER, request=BOB)
    clock.move_to(at(40))
    ledger.revert(migration, ledger.migration(migration).generation, 3,
                  request={"actor": "bob", "reason": "the resize failed"})

    store = ledger.store
    assert [(_usage(ledger, src, m)["VCPU"], _usage(ledger, dst, m)["VCPU"])
            for m in (15, 25, 35, 45)] == [(2, 0), (2, 0), (2, 4), (2, 0)]
    mid = cut(store, when=at(35))
    instance = consumer_at(store, vm, mid).value
    assert (instance.allocations, instance.migration_uuid) == ({dst: {"VCPU": 4}}, migration)
    context = migration_at(store, migration, mid).value
    assert (context.status, context.allocations, context.destination_root) == (
        "in-progress", {src: {"VCPU": 2}}, dst)
    hosts = hosts_at(store, mid).value
    assert {root: tree[root].usages["VCPU"] for root, tree in hosts.items()} == {src: 2, dst: 4}
    after = cut(store, when=at(45))
    assert migration_at(store, migration, after).value.status == "reverted"
    back = consumer_at(store, vm, after).value
    assert (back.allocations, back.migration_uuid, back.generation) == (
        {src: {"VCPU": 2}}, None, 4)


def test_history_tells_who_asked_why_and_what_changed(
    ledger: Ledger, clock: FrozenDateTimeFactory
) -> None:
    src, dst = a_host(ledger, vcpu=8, memory_mb=None), a_host(ledger, vcpu=8, memory_mb=None)
    vm, migration = new_id(), new_id()
    ledger.claim(vm, {src: {"VCPU": 2}}, None, project_id=PROJECT, user_id=USER,
                 request=ALICE)
    clock.move_to(at(20))
    ledger.swap(vm, migration, 1, kind="resize", request=BOB)
    ledger.claim(vm, {dst: {"VCPU": 4}}, None, project_id=PROJECT, user_id=USER, request=BOB)
    clock.move_to(at(40))
    ledger.revert(migration, ledger.migration(migration).generation, 3,
                  request={"actor": "carol", "request_id": "req-3", "reason": "failed"})

    story = migration_history(ledger.store, migration)
    assert [(e.event, e.actor, e.request_id, e.reason) for e in story] == [
        ("Migration.Started", "bob", "req-2", BOB["reason"]),
        ("Consumer.AllocationsHandedOver", "bob", "req-2", BOB["reason"]),
        ("Consumer.AllocationsClaimed", "bob", "req-2", BOB["reason"]),
        ("Migration.DestinationClaimed", "bob", "req-2", BOB["reason"]),
        ("Migration.Reverted", "carol", "req-3", "failed"),
        ("Consumer.AllocationsReturned", "carol", "req-3", "failed"),
    ]
    assert [e.time for e in story] == [at(20)] * 4 + [at(40)] * 2
    assert story[-1].changes["allocations"] == {src: {"VCPU": [0, 2]}, dst: {"VCPU": [4, 0]}}
    assert story[-2].changes["status"] == "reverted"
    assert [e.position for e in story] == sorted(e.position for e in story)
