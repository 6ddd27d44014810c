"""Queries over the read models: host usage and free capacity, a host's devices (held now,
and in a move's context), and the in-flight migrations older than a given age."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.projections import queries
from allocation_ledger.projections.queries import DeviceAssignment, TreeUsage
from allocation_ledger.projections.readmodels import ReadModels
from tests.builders import a_host, an_instance, new_id
from tests.stores import store_url


@pytest.fixture(params=["memory", "sqlite"])
def ledger(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Ledger]:
    with store_url(request.param, tmp_path) as url, open_ledger(url) as opened:
        yield opened


def caught_up(ledger: Ledger) -> ReadModels:
    """The ledger's read models, up to date."""
    read = ReadModels.of(ledger)
    read.resume()
    return read


def test_host_usage_rolls_up_the_tree_and_reports_over_capacity(ledger: Ledger) -> None:
    host = a_host(ledger, vcpu=8, memory_mb=4096)
    gpu = a_host(ledger, vcpu=None, memory_mb=None, parent=host)
    ledger.set_devices(gpu, "VGPU", ["d0", "d1", "d2"], 0)
    other = a_host(ledger, vcpu=4, memory_mb=None)
    an_instance(ledger, {host: {"VCPU": 6, "MEMORY_MB": 1024}, gpu: {"VGPU": 2}})
    ledger.set_inventory(host, "VCPU", {"total": 4}, ledger.provider(host).generation)

    read = caught_up(ledger)

    assert [(u.provider_uuid, u.resource_class, u.used, u.capacity, u.free, u.over_capacity)
            for u in queries.host_usage(read.engine, host)] == sorted([
        (host, "MEMORY_MB", 1024, 4096, 3072, False),
        (host, "VCPU", 6, 4, 0, True),
        (gpu, "VGPU", 2, 3, 1, False),
    ])
    assert queries.tree_usage(read.engine, host) == [
        TreeUsage(host, "MEMORY_MB", 1024, 4096, 3072, False),
        TreeUsage(host, "VCPU", 6, 4, 0, True),
        TreeUsage(host, "VGPU", 2, 3, 1, False),
    ]
    assert queries.free_capacity(read.engine, "VCPU") == [TreeUsage(other, "VCPU", 0, 4, 4,
                                                                     False)]
    assert [t.root_uuid for t in queries.free_capacity(read.engine, "VGPU")] == [host]
    assert queries.free_capacity(read.engine, "VGPU", at_least=2) == []


def test_devices_of_a_host_show_holders_and_the_moves_in_flight(ledger: Ledger) -> None:
    host = a_host(ledger, vcpu=8)
    gpu = a_host(ledger, vcpu=None, memory_mb=None, parent=host)
    ledger.set_devices(gpu, "VGPU", ["d0", "d1", "d2"], 0)
    vm = an_instance(ledger, {host: {"VCPU": 2}, gpu: {"VGPU": 1}})
    migration = new_id()
    ledger.swap(vm.consumer_uuid, migration, vm.generation or 0)
    ledger.claim(vm.consumer_uuid, {host: {"VCPU": 4}, gpu: {"VGPU": 1}}, None,
                 project_id="p", user_id="u")

    read = caught_up(ledger)
    devices = queries.devices_of_host(read.engine, host)

    def row(device: str, holder: str | None, role: str = "current",
            moving: str | None = None) -> DeviceAssignment:
        return DeviceAssignment(gpu, "VGPU", device, holder, role, moving)

    assert devices == [
        row("d0", migration), row("d0", vm.consumer_uuid, "old", migration),
        row("d1", vm.consumer_uuid), row("d1", vm.consumer_uuid, "new", migration),
        row("d2", None),
    ]
    ledger.confirm(migration, ledger.migration(migration).generation or 0)
    read.resume()
    assert queries.devices_of_host(read.engine, host) == [
        row("d0", None), row("d1", vm.consumer_uuid), row("d2", None)]
    assert queries.devices_of_host(read.engine, new_id()) == []


def test_in_flight_migrations_older_than_an_age(ledger: Ledger) -> None:
    host = a_host(ledger, vcpu=16)
    vms = [an_instance(ledger, {host: {"VCPU": 2}}) for _ in range(3)]
    moves = [new_id() for _ in vms]
    for vm, migration in zip(vms, moves, strict=True):
        ledger.swap(vm.consumer_uuid, migration, vm.generation or 0)
    ledger.revert(moves[1], ledger.migration(moves[1]).generation, None)
    started = [ledger.migration(m).started_at for m in moves]

    read = caught_up(ledger)
    at = started[2] + timedelta(seconds=60)
    found = queries.migrations_in_flight(read.engine, older_than_seconds=60, now=at)

    assert [m.migration_uuid for m in found] == [moves[0], moves[2]]
    assert [m.started_at for m in found] == [started[0], started[2]]
    assert found[0].old_allocations == {host: {"VCPU": 2}}
    assert (found[0].status, found[0].kind, found[0].source_root) == (
        "in-progress", "resize", host)
    assert queries.migrations_in_flight(read.engine, older_than_seconds=3600, now=at) == []
    assert [m.migration_uuid for m in queries.migrations_in_flight(read.engine)] == [
        moves[0], moves[2]]


def test_providers_named_finds_a_live_provider_by_its_name_now(ledger: Ledger) -> None:
    first = a_host(ledger, vcpu=4, memory_mb=None)
    second = a_host(ledger, vcpu=4, memory_mb=None)
    second_name = ledger.provider(second).name
    ledger.rename_provider(first, "renamed", ledger.provider(first).generation)
    ledger.delete_provider(second, ledger.provider(second).generation)
    engine = caught_up(ledger).engine
    assert [r.provider_uuid for r in queries.providers(engine, "renamed")] == [first]
    assert queries.providers(engine, second_name) == []  # deleted
    assert [r.provider_uuid for r in queries.providers(engine)] == [first]


def test_read_models_from_before_the_name_index_get_it_when_opened(tmp_path: Path) -> None:
    from sqlalchemy import inspect, text

    from allocation_ledger.projections.store import open_engine

    with open_ledger(f"sqlite:///{tmp_path / 'ledger.db'}") as ledger:
        engine = open_engine(ledger.store.env)
        with engine.begin() as conn:
            conn.execute(text("DROP INDEX proj_providers_name"))
        engine.dispose()
        engine = open_engine(ledger.store.env)
        names = {i["name"] for i in inspect(engine).get_indexes("proj_providers")}
        engine.dispose()
    assert "proj_providers_name" in names
